# Byte-compile the virtualenv once. Every episode starts a mini-swe-agent process, which imports LiteLLM
# (thousands of modules); where PYTHONDONTWRITEBYTECODE is set nothing is cached on first use, and each
# start would compile them all again, doubling its time. Only a speed-up: a file that fails to compile
# fails nothing.
"$1" -m compileall -q -j 0 "$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
