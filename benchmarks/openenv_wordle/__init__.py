"""Wordle written against OpenEnv 0.10.0's public API, the baseline our /ws server is measured against.

Run with the OpenEnv virtualenv's interpreter (``tests/peerenv.py peer_python("openenv")``); omnienv is
not importable there, so the rules are restated in ``game.py`` and the word lists are read by path.
"""
