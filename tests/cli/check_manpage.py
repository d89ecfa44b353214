#!/usr/bin/env python3
"""The manual page against the command: every command `uqjit help` lists
has a section (.SS) in docs/uqjit.1, every long option its `-h` prints
appears in that section (shape options, shared by several commands, may
sit in the plan section where the page lists them once), cache's
subcommands are described, every UQJIT_* variable the library and the
Python package read is in ENVIRONMENT, and a DEPLOYMENT section gives the
deploy recipe (warm --hf-config ... --image --manifest, cache verify
--manifest, UQJIT_CACHE_PATH, UQJIT_DISABLE_JIT).

Usage: check_manpage.py UQJIT MANPAGE SOURCE_ROOT. Exits 1 listing what is
missing."""
import re
import subprocess
import sys


def roff_text(page):
    """The page's words with roff's escaped hyphens made plain."""
    return page.replace("\\-", "-").replace("\\e", "\\")


def sections(page, macro):
    """{name: body} of the page's .SH or .SS sections."""
    out, name, body = {}, None, []
    for line in page.splitlines():
        if line.startswith(macro + " "):
            if name is not None:
                out[name] = "\n".join(body)
            name, body = line[len(macro) + 1:].strip(), []
        elif name is not None:
            if line.startswith(".SH ") and macro == ".SS":
                out[name] = "\n".join(body)
                name, body = None, []
            else:
                body.append(line)
    if name is not None:
        out[name] = "\n".join(body)
    return out


def run(uqjit, *args):
    r = subprocess.run([uqjit] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    return r.returncode, r.stdout, r.stderr


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    uqjit, man_path, root = sys.argv[1:]
    with open(man_path) as f:
        page = roff_text(f.read())
    missing = []
    code, out, _ = run(uqjit, "help")
    listed = re.search(r"^commands:\n((?:  \S.*\n)+)", out, re.M)
    commands = [l.split()[0] for l in listed.group(1).splitlines()] \
        if listed else []
    if not commands:
        missing.append("no commands from `uqjit help`")
    subs = sections(page, ".SS")
    shape_flags = set()
    code, out, _ = run(uqjit, "plan", "-h")
    shape = re.search(r"^shape options:\n((?:  .*\n)+)", out, re.M)
    if shape:
        shape_flags = set(re.findall(r"--[a-z0-9][a-z0-9-]*", shape.group(1)))
    for cmd in commands:
        code, out, err = run(uqjit, cmd, "-h")
        if code != 0:
            missing.append("`uqjit %s -h` exits %d: %s" % (cmd, code, err))
        body = subs.get(cmd)
        if body is None:
            missing.append("no section (.SS %s) for the command %s"
                           % (cmd, cmd))
            continue
        for flag in sorted(set(re.findall(r"--[a-z0-9][a-z0-9-]*", out))):
            if flag == "--help":
                continue
            here = re.search(re.escape(flag) + r"(?![a-z0-9-])", body)
            shared = flag in shape_flags and re.search(
                re.escape(flag) + r"(?![a-z0-9-])", subs.get("plan", ""))
            if not here and not shared:
                missing.append("%s: option %s is not in its section"
                               % (cmd, flag))
    for sub in ("ls", "verify", "prune", "stats"):
        if not re.search(r"^\.TP\n\.B %s$" % sub, subs.get("cache", ""),
                         re.M):
            missing.append("cache: subcommand %s is not described" % sub)
    tops = sections(page, ".SH")
    env = tops.get("ENVIRONMENT", "")
    variables = set()
    with open(root + "/lib/base/env.c") as f:
        variables |= set(re.findall(r'"(UQJIT_[A-Z_]+)"', f.read()))
    for py in ("_lib.py", "vllm.py"):
        with open(root + "/python/uqjit/" + py) as f:
            variables |= set(re.findall(r'"(UQJIT_[A-Z_]+)"', f.read()))
    for var in sorted(variables):
        if var not in env:
            missing.append("ENVIRONMENT lacks %s" % var)
    deploy = tops.get("DEPLOYMENT", "")
    for piece in ("uqjit warm --hf-config", "--image", "--manifest",
                  "uqjit cache verify", "UQJIT_CACHE_PATH=",
                  "UQJIT_DISABLE_JIT=1"):
        if piece not in deploy:
            missing.append("DEPLOYMENT lacks '%s'" % piece)
    for m in missing:
        print("FAIL: " + m)
    if not missing:
        print("ok: %d commands, every option and variable in the page"
              % len(commands))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
