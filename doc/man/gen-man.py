#!/usr/bin/env python3
"""gen-man.py PROGRAM EXTRA.h2m OUT.1: a man page from PROGRAM --help.

Like help2man (not needed): the NAME line, synopsis and OPTIONS come from
the CLI11 help of the built program, so the page lists exactly the options
its table declares, with their SVM_* twins and defaults; EXTRA.h2m adds
sections written by hand ("[SECTION]" headers, roff text below them).
"""
import re
import subprocess
import sys

prog_path, extra_path, out_path = sys.argv[1:4]
help_text = subprocess.run([prog_path, "--help"], capture_output=True, text=True, check=True).stdout
version = subprocess.run([prog_path, "--version"], capture_output=True, text=True, check=True).stdout.strip()
lines = help_text.splitlines()
name, _, summary = lines[0].partition(": ")


def roff(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s.startswith((".", "'")) else s


# CLI11: "  -n,--nodes TEXT (Env:SVM_NODES)  help", the help possibly on the
# next line(s), indented further.
options, cur = [], None
in_opts = False
for line in lines[1:]:
    if line.strip() == "Options:" or line.strip() == "OPTIONS:":
        in_opts = True
        continue
    if not in_opts:
        continue
    if not line.strip():
        in_opts = False
        continue
    m = re.match(r"^  (-\S+)(.*)$", line)
    if m and not line.startswith("      "):
        head, rest = m.group(1), m.group(2)
        parts = re.split(r"\s{2,}", rest.strip(), maxsplit=1)
        spec = parts[0] if parts else ""
        text = parts[1] if len(parts) > 1 else ""
        # The type column: upper-case words (TEXT, UINT, ..., REQUIRED),
        # =DEFAULT, (Env:...); anything else is already the help.
        if spec and not re.match(r"^(?:[A-Z][A-Z0-9_:]*(?![a-z])|\(Env:|=|\{)", spec):
            text, spec = (spec + " " + text).strip(), ""
        cur = {"flags": head, "spec": spec, "help": text}
        options.append(cur)
    elif cur is not None:
        cur["help"] = (cur["help"] + " " + line.strip()).strip()
footer = [l for l in lines if l.startswith("Usage:")]
synopsis = footer[-1][len("Usage: "):] if footer else name + " [OPTIONS]"

out = []
out.append('.TH %s 1 "" "%s" "User Commands"' % (name.upper(), roff(version)))
out.append(".SH NAME")
out.append("%s \\- %s" % (roff(name), roff(summary)))
out.append(".SH SYNOPSIS")
out.append(".B %s" % roff(name))
out.append(roff(synopsis[len(name):].strip()))
extra = {}
section = None
with open(extra_path) as f:
    for line in f:
        m = re.match(r"^\[(.+)\]\s*$", line)
        if m:
            section = m.group(1).upper()
            extra[section] = []
        elif section:
            extra[section].append(line.rstrip("\n"))
if "DESCRIPTION" in extra:
    out.append(".SH DESCRIPTION")
    out += extra.pop("DESCRIPTION")
out.append(".SH OPTIONS")
envs = []
for o in options:
    spec = o["spec"]
    env = re.search(r"\(Env:(\w+)\)", spec)
    if env:
        envs.append((env.group(1), o["flags"].split(",")[-1]))
    spec = re.sub(r"\s*\(Env:\w+\)", "", spec).strip()
    flags = ", ".join("\\fB%s\\fR" % roff(f) for f in o["flags"].split(","))
    out.append(".TP")
    out.append(flags + (" \\fI%s\\fR" % roff(spec) if spec else ""))
    out.append(roff(o["help"]) + (" (environment: \\fB%s\\fR)" % roff(env.group(1)) if env else ""))
if envs:
    out.append(".SH ENVIRONMENT")
    out.append("Each option has an environment twin; the option on the command line wins.")
    for var, flag in envs:
        out.append(".TP")
        out.append("\\fB%s\\fR" % roff(var))
        out.append("as \\fB%s\\fR" % roff(flag))
    for line in extra.pop("ENVIRONMENT", []):
        out.append(line)
for sec, body in extra.items():
    out.append(".SH %s" % sec)
    out += body
with open(out_path, "w") as f:
    f.write("\n".join(out) + "\n")
