#!/bin/sh  
echo hi   
