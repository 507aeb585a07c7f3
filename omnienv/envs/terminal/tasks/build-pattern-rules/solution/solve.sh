#!/bin/bash
set -e
cd /app
cat > Makefile <<'CEOF'
CC = gcc
CFLAGS = -std=c11 -Wall -O2 -Iinclude -MMD -MP
SRCS = $(wildcard src/*.c)
OBJS = $(SRCS:src/%.c=build/%.o)

bin/wordfreq: $(OBJS) | bin
	$(CC) $(CFLAGS) -o $@ $(OBJS)

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c -o $@ $<

build bin:
	mkdir -p $@

clean:
	rm -rf build bin

.PHONY: clean

-include $(OBJS:.o=.d)
CEOF
make
