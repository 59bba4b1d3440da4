"""What the stats end-to-end tests share: their flags, their checks, and a
run of svmrun --stats into a fresh JSON file."""
import argparse
import os
import subprocess

failures = []


def parse_args(*extra, **defaults):
    """--svmrun, --preload, --program and --workdir, required; `extra`
    required too; `defaults` optional with those defaults."""
    ap = argparse.ArgumentParser()
    for name in ("--svmrun", "--preload", "--program", "--workdir") + extra:
        ap.add_argument(name, required=True)
    for name, value in defaults.items():
        ap.add_argument("--" + name, default=value)
    return ap.parse_args()


def check(name, ok, detail="", width=56):
    """Prints one check's line; a failed one is kept in `failures`."""
    print("%-*s %s%s" % (width, name, "ok" if ok else "FAILED", "" if ok else ": " + detail))
    if not ok:
        failures.append(name)
    return ok


def run_stats(args, name, flags, program_args):
    """svmrun FLAGS --stats WORKDIR/NAME.json (removed first) -- program
    ARGS; returns the finished process and the JSON file's path."""
    os.makedirs(args.workdir, exist_ok=True)
    out = os.path.join(args.workdir, name + ".json")
    if os.path.exists(out):
        os.remove(out)
    cmd = [args.svmrun, *flags, "--timeout", "60", "--stats", out, "--preload", args.preload, "--",
           args.program, *program_args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90), out
