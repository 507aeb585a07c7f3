#!/bin/sh
# nemo-gym 0.7.0 itself: its metadata asks for Python >=3.13.14, its code runs on 3.11.
# Its dependencies come from requirements.txt (installed first), hence --no-deps.
set -e
"$1" -m pip install --quiet --disable-pip-version-check --no-deps --ignore-requires-python nemo-gym==0.7.0
