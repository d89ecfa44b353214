"""uqjit warm --hf-config reads config.json as Python's json does.

transformers reads a model's config.json as UTF-8 text with json.loads and
vLLM sizes attention from what that gives. For each crafted config this
test asks Python itself (the oracle) whether it parses and which
num_key_value_heads it yields (top level, else text_config), then runs
`uqjit warm --hf-config FILE --dry-run --json` and requires the same: a
refusal (exit 2) where Python refuses, else exit 0 and the same KV heads.
Duplicate keys (the last wins, nested objects too), trailing data, control
characters, invalid UTF-8 and number forms are the cases where cJSON alone
differs.

usage: hf_config_json.py UQJIT cjson|no-cjson
"""
import json
import os
import subprocess
import sys
import tempfile


def head(kv, extra=""):
    """A config whose attention fields uqjit serves for every kv dividing
    32 heads into groups of at most 16."""
    return ('{"num_attention_heads": 32, "head_dim": 256, '
            '"torch_dtype": "bfloat16"%s%s}' %
            ("" if kv is None else ', "num_key_value_heads": %s' % kv,
             extra))


CASES = [
    ("plain", head(4)),
    ("duplicate key, last wins", head(2, ', "num_key_value_heads": 4')),
    ("duplicate key, first wins would give 4",
     head(4, ', "num_key_value_heads": 2')),
    ("duplicate key, last one malformed",
     head(4, ', "num_key_value_heads": "four"')),
    ("duplicate text_config objects, the last one whole",
     head(None, ', "text_config": {"num_key_value_heads": 2}, '
          '"text_config": {"model_type": "x"}')),
    ("duplicate text_config objects, last has the field",
     head(None, ', "text_config": {"num_key_value_heads": 4}, '
          '"text_config": {"num_key_value_heads": 2}')),
    ("duplicate inside text_config",
     head(None, ', "text_config": {"num_key_value_heads": 4, '
          '"num_key_value_heads": 2}')),
    ("duplicates deep in an array",
     head(4, ', "x": [{"a": 1, "a": 2}, {"b": {"c": 1, "c": 2}}]')),
    ("second object after the first", head(4) + ' {}'),
    ("garbage after the object", head(4) + 'x'),
    ("NUL and garbage after the object", head(4) + '\0garbage'),
    ("trailing JSON whitespace", "\n\t " + head(4) + " \r\n\n"),
    ("form feed before the object", "\f" + head(4)),
    ("vertical tab inside", head(4).replace(', "head_dim"', ',\v"head_dim"')),
    ("raw tab inside a string", head(4, ', "model_type": "a\tb"')),
    ("escaped tab inside a string", head(4, ', "model_type": "a\\tb"')),
    ("number with a leading zero", head("04")),
    ("number with a trailing point", head("4.")),
    ("number with an exponent elsewhere", head(4, ', "rope_theta": 5e+5')),
    ("fraction and exponent elsewhere", head(4, ', "eps": -1.5E-05')),
    ("negative zero elsewhere", head(4, ', "x": -0')),
    ("invalid UTF-8 in a string", head(4, ', "model_type": "\udcff"')),
    ("a surrogate encoded in UTF-8", head(4, ', "model_type": "\udced\udca0\udc80"')),
    ("valid UTF-8 in a string", head(4, ', "model_type": "caf\u00e9 \u4e2d"')),
    ("UTF-8 byte order mark", "\ufeff" + head(4)),
    ("empty key and escapes", head(4, ', "": 1, "q\\"x": "\\\\"')),
]


# Python accepts these and uqjit refuses them on purpose, failing closed:
# cJSON can neither parse NaN or Infinity nor hold a NUL in a string (it
# would read the key below as num_key_value_heads). Each must be refused
# with its reason named.
REFUSED_ON_PURPOSE = [
    ("NaN", head(4, ', "rope_theta": NaN'), "not a JSON object"),
    ("Infinity", head(4, ', "rope_theta": -Infinity'), "not a JSON object"),
    ("NUL escape in a key", head(2, ', "num_key_value_heads\\u0000x": 4'),
     "\\u0000"),
]


def served(kv):
    """Whether a decode layer serves 32 query heads over kv heads
    (docs/FORMAT.md section 6: query groups 1..16 dividing the heads)."""
    return isinstance(kv, int) and 0 < kv <= 32 and 32 % kv == 0 and 32 // kv <= 16


def python_view(data):
    """(accepted, kv) as transformers would read the bytes."""
    try:
        cfg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False, None
    if not isinstance(cfg, dict):
        return False, None
    kv = cfg.get("num_key_value_heads")
    if kv is None and isinstance(cfg.get("text_config"), dict):
        kv = cfg["text_config"].get("num_key_value_heads")
    if kv is None:
        kv = cfg.get("num_attention_heads")
    return True, kv


def uqjit_view(uqjit, path):
    """(exit status, kv heads or None, stderr)."""
    p = subprocess.run(
        [uqjit, "warm", "--hf-config", path, "--block-size", "16",
         "--max-model-len", "64", "--max-num-seqs", "1", "--target",
         "sm_90a", "--dry-run", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    kv = None
    if p.returncode == 0:
        kv = json.loads(p.stdout)["model"]["num_kv_heads"]
    return p.returncode, kv, p.stderr.decode("utf-8", "replace")


def main():
    uqjit, cjson = sys.argv[1], sys.argv[2]
    if cjson != "cjson":
        print("built without cJSON: skipping")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (what, text) in enumerate(CASES):
            data = text.encode("utf-8", "surrogateescape")
            path = os.path.join(tmp, "config-%d.json" % i)
            with open(path, "wb") as f:
                f.write(data)
            accepted, kv = python_view(data)
            code, got, err = uqjit_view(uqjit, path)
            if not accepted:
                ok = code == 2 and "not a JSON object" in err
                want = "refused (exit 2, 'not a JSON object')"
            elif not served(kv):
                ok = code == 2
                want = "refused (exit 2): num_key_value_heads %r" % (kv,)
            else:
                ok = code == 0 and got == kv
                want = "exit 0, %d KV heads" % kv
            print("%-4s %-52s python: %-8s uqjit: exit %d%s" %
                  ("ok" if ok else "FAIL", what,
                   ("kv %r" % (kv,)) if accepted else "refuses", code,
                   "" if got is None else ", kv %d" % got))
            if not ok:
                failures += 1
                print("     want %s; stderr: %s" % (want, err.strip()))
        for i, (what, text, reason) in enumerate(REFUSED_ON_PURPOSE):
            data = text.encode("utf-8")
            path = os.path.join(tmp, "refused-%d.json" % i)
            with open(path, "wb") as f:
                f.write(data)
            accepted, _ = python_view(data)
            code, _, err = uqjit_view(uqjit, path)
            ok = accepted and code == 2 and reason in err
            print("%-4s %-52s python: accepts  uqjit: exit %d (on purpose)" %
                  ("ok" if ok else "FAIL", what, code))
            if not ok:
                failures += 1
                print("     want exit 2 naming %r; stderr: %s" %
                      (reason, err.strip()))
    print("%d of %d cases agree with Python's json, %d refused on purpose" %
          (len(CASES) - failures, len(CASES), len(REFUSED_ON_PURPOSE)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
