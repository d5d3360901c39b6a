#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Embed a text file as a C string: embed.py INPUT OUTPUT SYMBOL."""
import sys

data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "w") as out:
    out.write("/* Generated from %s by common/objects/embed.py; do not edit. */\n" % sys.argv[1].split("/")[-1])
    out.write("const char %s[] =\n" % sys.argv[3])
    for line in data.decode().splitlines():
        out.write('\t"%s\\n"\n' % line.replace("\\", "\\\\").replace('"', '\\"'))
    out.write(";\n")
