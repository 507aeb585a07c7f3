#!/bin/bash
set -e
cd /app
cat > Makefile <<'CEOF'
CC = gcc
CFLAGS = -std=c11 -Wall -O2 -D_DEFAULT_SOURCE
LDLIBS = -lm

angles: angles.o
	$(CC) $(CFLAGS) -o $@ angles.o $(LDLIBS)

angles.o: angles.c
	$(CC) $(CFLAGS) -c -o $@ angles.c

clean:
	rm -f angles angles.o

.PHONY: clean
CEOF
make
