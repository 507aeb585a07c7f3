#!/bin/bash
set -e
cd /app
cat > Makefile <<'CEOF'
CC = gcc
CFLAGS = -std=c11 -Wall -O2
OBJS = main.o stack.o ops.o

all: rpn

rpn: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS) -lm

%.o: %.c stack.h ops.h
	$(CC) $(CFLAGS) -c -o $@ $<

clean:
	rm -f *.o rpn

.PHONY: all clean
CEOF
make
