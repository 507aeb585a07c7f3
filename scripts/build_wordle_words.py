"""Build the Wordle word lists from SCOWL (Debian package `scowl`).

Run once by a maintainer; the resulting text files are committed, so neither tests nor users need
the `scowl` package. Answers are common words (SCOWL size <= 40) that are not plain inflections
(plurals, past tenses) or offensive; accepted guesses are every five-letter word up to size 80.

    apt-get install scowl && python scripts/build_wordle_words.py
"""

from __future__ import annotations

import hashlib
from pathlib import Path

SCOWL = Path("/usr/share/dict/scowl")
OUT = Path(__file__).resolve().parents[1] / "omnienv" / "envs" / "wordle" / "words"
ANSWER_LEVELS = (10, 20, 35, 40)
GUESS_LEVELS = (10, 20, 35, 40, 50, 55, 60, 70, 80)
TEST_FRACTION_PERCENT = 20
# Words a game should never ask a player to find.
BLOCKED = {
    "bitch",
    "semen",
    "pussy",
    "penis",
    "dildo",
    "whore",
    "slut",
    "sluts",
    "fagot",
    "faggot",
    "nigga",
    "negro",
    "boobs",
    "booby",
    "horny",
    "kinky",
    "porno",
    "pubic",
    "rapes",
    "rapist",
    "sexed",
    "sexes",
    "spick",
    "spics",
    "dicks",
    "cocks",
    "balls",
    "bimbo",
    "butts",
    "crapy",
    "dykes",
    "gonad",
    "homos",
    "honky",
    "hooch",
    "hussy",
    "lynch",
    "nazis",
    "queer",
    "tramp",
    "wench",
    "wanks",
    "twats",
    "shits",
    "shite",
    "turds",
    "pimps",
    "orgys",
    "orgasm",
    "enema",
    "vomit",
    "kraut",
    "gypsy",
    "gyppy",
    "retch",
    "slave",
    "idiot",
    "moron",
    "harem",
    "lusty",
}


def read_words(levels: tuple[int, ...]) -> set[str]:
    words: set[str] = set()
    for level in levels:
        for variant in ("english-words", "american-words"):
            path = SCOWL / f"{variant}.{level}"
            if path.exists():
                text = path.read_bytes().decode("latin-1")
                words.update(w for w in text.split() if w.isascii() and w.isalpha() and w.islower())
    return words


def is_inflection(word: str, vocabulary: set[str]) -> bool:
    """A plural or past tense whose stem is itself a word makes a poor answer."""
    if word.endswith("s") and not word.endswith("ss"):
        if word[:-1] in vocabulary or (word[:-2] in vocabulary and word.endswith("es")):
            return True
        if word.endswith("ies") and word[:-3] + "y" in vocabulary:
            return True
    if word.endswith("ed"):
        stems = {word[:-2], word[:-1], word[:-3] + "y"}
        if word[-3] == word[-4]:
            stems.add(word[:-3])
        if stems & vocabulary:
            return True
    return False


def is_test_word(word: str) -> bool:
    """A stable, order-free split: the same word always lands in the same split."""
    return int(hashlib.sha256(word.encode()).hexdigest(), 16) % 100 < TEST_FRACTION_PERCENT


def main() -> None:
    common = read_words(ANSWER_LEVELS)
    answers = sorted(w for w in common if len(w) == 5 and w not in BLOCKED and not is_inflection(w, common))
    guesses = sorted({w for w in read_words(GUESS_LEVELS) if len(w) == 5} | set(answers))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "train.txt").write_text("\n".join(w for w in answers if not is_test_word(w)) + "\n")
    (OUT / "test.txt").write_text("\n".join(w for w in answers if is_test_word(w)) + "\n")
    (OUT / "guesses.txt").write_text("\n".join(guesses) + "\n")
    print(f"{len(answers)} answers, {len(guesses)} accepted guesses -> {OUT}")


if __name__ == "__main__":
    main()
