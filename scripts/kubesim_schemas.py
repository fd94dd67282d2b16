#!/usr/bin/env python3
"""Writes kube-sim's schema tables (src/kubesim/schemas.inc, src/kubesim/openapi_v3.inc) from a real
API server's /openapi/v2.

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

openapi_v3.inc is what kube-sim serves under /openapi/v3: one JSON object,
    {"version": V, "schemas": {NAME: SCHEMA}, "documents": {PATH: [NAME, ...]}}
where PATH is a document's path under /openapi/v3 ("api/v1", "apis/apps/v1",
"apis/apps", "api", "apis", "version") and its NAMEs are the schemas its
operations reach. SCHEMA is the v2 definition in the shape the API server's
v3 documents give it (a reference is {"allOf": [{"$ref": ...}]}, IntOrString
and Quantity are oneOf), without descriptions and defaults (v2 has none).
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
    write_openapi_v3(doc, os.path.join(root, "src", "kubesim", "openapi_v3.inc"))


def refs_in(x, out):
    """Adds the definition names x refers to (a field named "$ref" is no reference)."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v.split("/")[-1])
            else:
                refs_in(v, out)
    elif isinstance(x, list):
        for v in x:
            refs_in(v, out)


def document_of(path):
    """The /openapi/v3 document a v2 path belongs to, or None."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    if parts[0] == "api":
        return "/".join(parts[:2])
    if parts[0] == "apis":
        return "/".join(parts[:3])
    if parts[0] == "version":
        return "version"
    return None  # logs, OIDC discovery: no schemas


def v3_schema(x):
    """A v2 definition or property as the v3 documents write it."""
    out = {}
    for k, v in x.items():
        if k in ("description", "default") or (k == "$ref" and isinstance(v, str)):
            continue
        if k == "properties":
            out[k] = {n: v3_schema(p) for n, p in v.items()}
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            out[k] = v3_schema(v)
        else:
            out[k] = v
    if isinstance(x.get("$ref"), str):
        out["allOf"] = [{"$ref": "#/components/schemas/" + x["$ref"].split("/")[-1]}]
    return out


V3_SCALARS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
        {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity":
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
}


def write_openapi_v3(doc, target):
    defs = doc["definitions"]
    documents = {}
    for path, ops in doc["paths"].items():
        name = document_of(path)
        if name:
            refs_in(ops, documents.setdefault(name, set()))
    for names in documents.values():
        todo = list(names)
        while todo:
            more = set()
            refs_in(defs[todo.pop()], more)
            for m in more - names:
                names.add(m)
                todo.append(m)
    used = set().union(*documents.values())
    schemas = {n: V3_SCALARS.get(n) or v3_schema(defs[n]) for n in used}
    table = {"version": doc.get("info", {}).get("version", "?"), "schemas": schemas,
             "documents": {k: sorted(v) for k, v in documents.items()}}
    text = json.dumps(table, separators=(",", ":"), sort_keys=True)
    if ')KUBESIM_OPENAPI"' in text:
        raise SystemExit("the table cannot be written as a raw string")
    # Lines of ~100 columns, cut after a comma (a raw string keeps the newlines; JSON ignores them).
    lines, start, in_string, escaped = [], 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "," and i - start >= 96:
            lines.append(text[start:i + 1])
            start = i + 1
    lines.append(text[start:])
    out = ["// Generated by scripts/kubesim_schemas.py from the /openapi/v2 of kube-apiserver " +
           table["version"] + ";", "// do not edit. The format is described in that script.",
           'R"KUBESIM_OPENAPI('] + lines + [')KUBESIM_OPENAPI"']
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print("%s: %d documents, %d schemas, %d bytes" % (target, len(documents), len(schemas),
                                                     os.path.getsize(target)))


if __name__ == "__main__":
    main()
