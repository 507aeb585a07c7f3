#!/bin/bash
set -e
cd /app
cat > Makefile <<'CEOF'
CC = gcc
CFLAGS = -std=c11 -Wall -O2
OBJS = main.o counts.o

wordcount: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS)

%.o: %.c counts.h
	$(CC) $(CFLAGS) -c $<

clean:
	rm -f $(OBJS) wordcount

.PHONY: clean
CEOF
make
