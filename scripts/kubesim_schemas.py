#!/usr/bin/env python3
"""Writes kube-sim's schema table (src/kubesim/schemas.inc) from a real API server's /openapi/v2.

kube-sim refuses undeclared fields as the API server does, so it needs every
built-in kind's field tree. The table keeps only that: for each served kind
the definitions it reaches, each field with its type. It is committed, because
CI builds from a clean clone without the recordings. Regenerate it with

    scripts/kubesim_schemas.py [OPENAPI_V2_JSON_GZ]

(default: ../shared/reference/kubernetes/openapi-v2.json.gz, recorded from
kube-apiserver v1.26.0).

Format, one record per line (src/kubesim/schema.cc reads it):
    kind GROUP/VERSION KIND DEF     a served kind (core: v1) and its definition
    def NAME [!atomic] FIELD:TYPE ...
TYPE is one of
    s i n b   string, integer, number, boolean
    t         a scalar of either kind (IntOrString, Quantity)
    x         anything (RawExtension, JSON, FieldsV1: opaque to the schema)
    @NAME     another definition
    [TYPE     a list; its elements' TYPE, then /K1,K2 (keyed by those fields),
              /set (a set of scalars) or nothing (atomic)
    {TYPE     a map from strings to TYPE
"""
import gzip
import json
import os
import sys

PREFIXES = [
    "io.k8s.api.",
    "io.k8s.apimachinery.pkg.apis.",
    "io.k8s.apimachinery.pkg.",
    "io.k8s.apiextensions-apiserver.pkg.apis.",
    "io.k8s.kube-aggregator.pkg.apis.",
]
SCALAR_ANY = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
}


def short(name):
    for p in PREFIXES:
        if name.startswith(p):
            return name[len(p):]
    return name


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ref = os.path.join(root, "..", "shared", "reference", "kubernetes")
    openapi_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ref, "openapi-v2.json.gz")
    with gzip.open(openapi_path) as f:
        doc = json.load(f)
    defs = doc["definitions"]

    # Served kinds: those the document's operations (its paths) are for.
    served = set()
    for ops in doc["paths"].values():
        for op in ops.values():
            gvk = op.get("x-kubernetes-group-version-kind") if isinstance(op, dict) else None
            if gvk:
                gv = gvk["version"] if not gvk["group"] else gvk["group"] + "/" + gvk["version"]
                served.add((gv, gvk["kind"]))

    kinds = []
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            gv = gvk["version"] if not gvk["group"] else gvk["group"] + "/" + gvk["version"]
            if (gv, gvk["kind"]) in served:
                kinds.append((gv, gvk["kind"], name))
    kinds.sort()

    def is_opaque(d):
        if "$ref" in d:
            return False
        t = d.get("type")
        if t is None and "properties" not in d and "items" not in d:
            return True
        return t == "object" and "properties" not in d and "additionalProperties" not in d \
            or d.get("x-kubernetes-preserve-unknown-fields") is True

    needed = []
    seen = set()

    def type_of(p):
        if "$ref" in p:
            target = p["$ref"].split("/")[-1]
            if target in SCALAR_ANY:
                return "t"
            td = defs[target]
            if is_opaque(td):
                return "x"
            if "properties" not in td:  # a named scalar (Time, MicroTime)
                return type_of(td)
            if target not in seen:
                seen.add(target)
                needed.append(target)
            return "@" + short(target)
        if is_opaque(p):
            return "x"
        t = p.get("type")
        if t == "array":
            elem = type_of(p["items"])
            lt = p.get("x-kubernetes-list-type")
            keys = p.get("x-kubernetes-list-map-keys")
            strategy = p.get("x-kubernetes-patch-strategy", "")
            merge_key = p.get("x-kubernetes-patch-merge-key")
            if lt == "map" and keys:
                return "[" + elem + "/" + ",".join(keys)
            if lt == "set":
                return "[" + elem + "/set"
            if lt is None and strategy.startswith("merge"):
                return "[" + elem + ("/" + merge_key if merge_key else "/set")
            return "[" + elem
        if t == "object":
            ap = p.get("additionalProperties")
            if isinstance(ap, dict):
                return "{" + type_of(ap)
            return "x"
        if t == "string":
            return "t" if p.get("format") == "int-or-string" else "s"
        return {"integer": "i", "number": "n", "boolean": "b"}[t]

    for _, _, name in kinds:
        if name not in seen:
            seen.add(name)
            needed.append(name)
    lines = []
    i = 0
    while i < len(needed):
        name = needed[i]
        i += 1
        d = defs[name]
        fields = []
        for fname in sorted(d.get("properties", {})):
            t = type_of(d["properties"][fname])
            if " " in fname or ":" in fname:
                raise SystemExit("field name %r cannot be written" % fname)
            fields.append(fname + ":" + t)
        flag = " !atomic" if d.get("x-kubernetes-map-type") == "atomic" else ""
        lines.append("def " + short(name) + flag + (" " + " ".join(fields) if fields else ""))
    shorts = [short(n) for n in needed]
    if len(set(shorts)) != len(shorts):
        raise SystemExit("short definition names collide")
    lines.sort()

    version = doc.get("info", {}).get("version", "?")
    out = ["// Generated by scripts/kubesim_schemas.py from the /openapi/v2 of kube-apiserver " + version + ";",
           "// do not edit. The format is described in that script.",
           'R"KUBESIM_SCHEMAS(']
    out += ["kind %s %s %s" % (gv, k, short(n)) for gv, k, n in kinds]
    out += lines
    out.append(')KUBESIM_SCHEMAS"')
    target = os.path.join(root, "src", "kubesim", "schemas.inc")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print("%s: %d kinds, %d definitions, %d bytes" % (target, len(kinds), len(lines),
                                                     os.path.getsize(target)))


if __name__ == "__main__":
    main()
