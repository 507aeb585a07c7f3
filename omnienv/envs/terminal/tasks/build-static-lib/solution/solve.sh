#!/bin/bash
set -e
cd /app
cat > Makefile <<'CEOF'
CC = gcc
CFLAGS = -std=c11 -Wall -O2 -Iinclude
AR = ar
PREFIX = /usr/local
LIB_OBJS = src/words.o src/lines.o

all: libtextstat.a tstat

libtextstat.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

tstat: src/main.o libtextstat.a
	$(CC) $(CFLAGS) -o $@ src/main.o -L. -ltextstat

src/%.o: src/%.c include/textstat.h
	$(CC) $(CFLAGS) -c -o $@ $<

install: all
	mkdir -p $(PREFIX)/bin $(PREFIX)/lib $(PREFIX)/include
	cp tstat $(PREFIX)/bin/
	cp libtextstat.a $(PREFIX)/lib/
	cp include/textstat.h $(PREFIX)/include/

clean:
	rm -f src/*.o libtextstat.a tstat

.PHONY: all install clean
CEOF
make
