#!/usr/bin/env python3
"""Generates crates/protobuf/src/schema_table.rs, the wire schema of the built-in
Kubernetes types kyb-protobuf decodes and encodes: every message reachable from the
served kinds, with each field's number, JSON name, wire kind and presence flags.

Inputs (both are crates already in the local cargo registry; no network needed):
  * k8s-pb 0.9    -- prost structs: field numbers, wire types, repeated/map, message types.
  * k8s-openapi 0.29 (v1_33) -- the JSON name of every field (its serde field matcher)
                               and which fields are required (not wrapped in Option).
  * gen/pointer_fields.txt -- optional scalar fields that are pointers in Go (whose
                              zero value is meaningful and must be kept).

Usage:  python3 crates/protobuf/gen/gen_schema.py [--report]
  --report  print the fields dropped as newer than the served API version and every
            optional scalar field (with its pointer flag) instead of writing the table.
The output file is committed; the build needs neither this script nor the network.
"""

from __future__ import annotations

import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "schema_table.rs")


def registry_dir(name: str) -> str:
    pattern = os.path.expanduser(f"~/.cargo/registry/src/*/{name}")
    found = sorted(glob.glob(pattern))
    if not found:
        sys.exit(f"cannot find {name} in the cargo registry (run `cargo fetch` first)")
    return found[-1]


PB = os.path.join(registry_dir("k8s-pb-0.9.0"), "src")
OA = os.path.join(registry_dir("k8s-openapi-0.29.0"), "src", "v1_33")

# Group versions we serve, as k8s-pb module paths, with their apiVersion strings.
GROUP_VERSIONS = {
    "api/core/v1": "v1",
    "api/apps/v1": "apps/v1",
    "api/batch/v1": "batch/v1",
    "api/coordination/v1": "coordination.k8s.io/v1",
    "api/discovery/v1": "discovery.k8s.io/v1",
    "api/events/v1": "events.k8s.io/v1",
    "api/policy/v1": "policy/v1",
    "api/autoscaling/v1": "autoscaling/v1",
    "api/autoscaling/v2": "autoscaling/v2",
    "api/networking/v1": "networking.k8s.io/v1",
    "api/storage/v1": "storage.k8s.io/v1",
    "api/scheduling/v1": "scheduling.k8s.io/v1",
    "api/node/v1": "node.k8s.io/v1",
    "api/rbac/v1": "rbac.authorization.k8s.io/v1",
    "api/admissionregistration/v1": "admissionregistration.k8s.io/v1",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1": "apiextensions.k8s.io/v1",
    "kube_aggregator/pkg/apis/apiregistration/v1": "apiregistration.k8s.io/v1",
    "api/authentication/v1": "authentication.k8s.io/v1",
    "api/authorization/v1": "authorization.k8s.io/v1",
    "api/certificates/v1": "certificates.k8s.io/v1",
    "api/flowcontrol/v1": "flowcontrol.apiserver.k8s.io/v1",
}
META = "apimachinery/pkg/apis/meta/v1"

# Kinds that are not REST resources but are sent as bodies.
EXTRA_KINDS = [
    ("api/core/v1", "Binding"),
    ("api/policy/v1", "Eviction"),
    ("api/autoscaling/v1", "Scale"),
    ("api/authentication/v1", "TokenRequest"),
]

# meta/v1 kinds: their apiVersion is any served group version (the options kinds are
# registered in every group version), "v1" for the unversioned ones, or meta.k8s.io/v1.
META_KINDS = [
    "Status", "DeleteOptions", "CreateOptions", "PatchOptions", "UpdateOptions",
    "ListOptions", "GetOptions", "WatchEvent", "APIVersions", "APIGroup", "APIGroupList",
    "APIResourceList", "PartialObjectMetadata", "PartialObjectMetadataList",
]

# Messages whose JSON form is not an object of their fields.
SPECIAL = {
    f"{META}.Time": "Time",
    f"{META}.MicroTime": "MicroTime",
    f"{META}.FieldsV1": "FieldsV1",
    f"{META}.Verbs": "StringList",
    "apimachinery/pkg/api/resource.Quantity": "Quantity",
    "apimachinery/pkg/util/intstr.IntOrString": "IntOrString",
    "apimachinery/pkg/runtime.RawExtension": "RawExtension",
    "api/authentication/v1.ExtraValue": "StringList",
    "api/authorization/v1.ExtraValue": "StringList",
    "api/certificates/v1.ExtraValue": "StringList",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1.JSON": "Json",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrArray": "SchemaOrArray",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrBool": "SchemaOrBool",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrStringArray": "SchemaOrStringArray",
}

ATTR_RE = re.compile(r"#\[prost\((.*)\)\]")
FIELD_RE = re.compile(r"pub (?:r#)?(\w+):\s*(.*?),?$", re.S)


def norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# ---------------------------------------------------------------- k8s-pb parsing


class PbField:
    def __init__(self, name, attr, rust_type, module):
        self.name = name
        self.attr = attr
        self.number = int(re.search(r'tag = "(\d+)"', attr).group(1))
        self.repeated = ", repeated" in attr
        self.map = None
        self.scalar = None  # for non-message fields
        self.msg = None  # referenced message (module.Name) for messages / map values
        m = re.match(r'btree_map = "(\w+), (\w+)"', attr)
        if m:
            self.map = (m.group(1), m.group(2))
            if m.group(2) == "message":
                self.msg = resolve(last_type_arg(rust_type), module)
        else:
            kind = attr.split(",")[0].strip()
            if kind.startswith("bytes"):
                kind = "bytes"
            if kind == "message":
                inner = re.sub(r"::prost::alloc::boxed::Box<(.*)>", r"\1", strip_wrapper(rust_type))
                self.msg = resolve(inner, module)
            else:
                self.scalar = kind


def strip_wrapper(t: str) -> str:
    t = re.sub(r"\s+", "", t)
    m = re.match(r"^(?:::core::option::Option|::prost::alloc::vec::Vec)<(.*)>$", t)
    return m.group(1) if m else t


def last_type_arg(t: str) -> str:
    t = re.sub(r"\s+", "", t)
    m = re.match(r"^::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,(.*)>$", t)
    if not m:
        raise ValueError(f"unexpected map type {t}")
    return m.group(1)


def resolve(path: str, module: str) -> str:
    parts = path.split("::")
    mod = module.split("/")
    while parts and parts[0] == "super":
        parts.pop(0)
        mod.pop()
    if parts and parts[0] == "crate":
        parts.pop(0)
        mod = []
    name = parts.pop()
    return "/".join(mod + parts) + "." + name


def parse_pb():
    messages = {}
    for path in glob.glob(os.path.join(PB, "**", "mod.rs"), recursive=True):
        module = os.path.relpath(os.path.dirname(path), PB)
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        current = None
        while i < len(lines):
            line = lines[i].strip()
            m = re.match(r"pub struct (\w+) \{(\})?$", line)
            if m and m.group(2):
                messages[f"{module}.{m.group(1)}"] = []
            elif m:
                current = []
                messages[f"{module}.{m.group(1)}"] = current
            elif line == "}":
                current = None
            elif current is not None:
                a = ATTR_RE.match(line)
                if a:
                    text = ""
                    i += 1
                    while True:
                        text += lines[i].strip()
                        if text.endswith(",") and text.count("<") == text.count(">"):
                            break
                        i += 1
                    text = text.replace(",>", ">")
                    f = FIELD_RE.match(text)
                    current.append(PbField(f.group(1), a.group(1), f.group(2), module))
            i += 1
    return messages


def parse_resources():
    """(module, kind) pairs of the REST resources k8s-pb knows."""
    out = []
    for path in glob.glob(os.path.join(PB, "**", "mod.rs"), recursive=True):
        module = os.path.relpath(os.path.dirname(path), PB)
        for m in re.finditer(r"impl crate::Resource for (\w+) \{", open(path, encoding="utf-8").read()):
            out.append((module, m.group(1)))
    return out


# ------------------------------------------------------------- k8s-openapi parsing


class OaStruct:
    def __init__(self, definition):
        self.definition = definition
        self.json = {}  # rust field name -> JSON name
        self.required = set()  # rust field names not wrapped in Option


def parse_openapi():
    """Maps (k8s-pb module, normalized type name) -> OaStruct."""
    prefixes = {
        "io.k8s.api.": "api/",
        "io.k8s.apimachinery.pkg.": "apimachinery/pkg/",
        "io.k8s.apiextensions-apiserver.pkg.": "apiextensions_apiserver/pkg/",
        "io.k8s.kube-aggregator.pkg.": "kube_aggregator/pkg/",
    }
    out = {}
    for path in glob.glob(os.path.join(OA, "**", "*.rs"), recursive=True):
        text = open(path, encoding="utf-8").read()
        m = re.match(r"// Generated from definition (\S+)", text)
        if not m:
            continue
        definition = m.group(1)
        module = None
        for prefix, repl in prefixes.items():
            if definition.startswith(prefix):
                rest = definition[len(prefix):]
                pkg, _, name = rest.rpartition(".")
                module = repl + pkg.replace(".", "/")
                break
        if module is None:
            continue
        s = OaStruct(definition)
        body = re.search(r"pub struct \w+ \{\n(.*?)\n\}", text, re.S)
        if body:
            for fm in re.finditer(r"^    pub (\w+): (.*),$", body.group(1), re.M):
                if not fm.group(2).startswith("Option<"):
                    s.required.add(fm.group(1))
        for fm in re.finditer(r'^\s*"([^"]+)" => Field::Key_(\w+),$', text, re.M):
            s.json[fm.group(2)] = fm.group(1)
        out[(module, norm(name))] = s
    return out


# ----------------------------------------------------------------- table building


def lower_camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def main():
    report = "--report" in sys.argv
    pb = parse_pb()
    normalize_special(pb)
    oa = parse_openapi()
    pointers = set()
    pointer_file = os.path.join(HERE, "pointer_fields.txt")
    if os.path.exists(pointer_file):
        for line in open(pointer_file, encoding="utf-8"):
            line = line.split("#")[0].strip()
            if line:
                pointers.add(line)

    # Root kinds.
    kinds = []  # (apiVersion, kind, message)
    for module, kind in parse_resources():
        # Skip kinds newer than the served API version (absent from k8s-openapi v1_33).
        if module in GROUP_VERSIONS and (module, norm(kind)) in oa:
            kinds.append((GROUP_VERSIONS[module], kind, f"{module}.{kind}"))
            if f"{module}.{kind}List" in pb:
                kinds.append((GROUP_VERSIONS[module], kind + "List", f"{module}.{kind}List"))
    for module, kind in EXTRA_KINDS:
        kinds.append((GROUP_VERSIONS[module], kind, f"{module}.{kind}"))
    pb_names = {}
    for full in pb:
        module, _, name = full.rpartition(".")
        pb_names[(module, name)] = full
    meta_kinds = []
    for kind in META_KINDS:
        full = f"{META}.{kind}"
        if full not in pb:
            # prost renames e.g. APIGroup to ApiGroup.
            cands = [f for (m, n), f in pb_names.items() if m == META and n.lower() == kind.lower()]
            if len(cands) != 1:
                sys.exit(f"meta kind {kind} not found")
            full = cands[0]
        meta_kinds.append((kind, full))
    for av, kind, full in kinds:
        if full not in pb:
            sys.exit(f"kind {av} {kind}: no message {full}")

    # Reachable messages. A message's JSON names come from its own k8s-openapi struct,
    # or, for a message only embedded inline (Go's `json:",inline"`), from the struct
    # it is flattened into.
    order = []
    queue = [(full, None) for _, _, full in kinds] + [(full, None) for _, full in meta_kinds]
    queue.append(("apimachinery/pkg/runtime.Unknown", None))
    resolved = {}
    dropped = []
    while queue:
        full, parent_struct = queue.pop(0)
        if full in resolved:
            continue
        module, _, name = full.rpartition(".")
        own = oa.get((module, norm(name)))
        struct = own or parent_struct
        fields = []
        resolved[full] = fields
        order.append(full)
        if full in SPECIAL_NORM:
            # Special forms are converted by hand, by field number; names are informative.
            for f in pb[full]:
                fields.append((f, lower_camel(f.name), False, False))
                if f.msg:
                    queue.append((f.msg, None))
            continue
        by_norm = {}
        if struct:
            for rust, js in struct.json.items():
                by_norm[norm(js)] = (js, rust in struct.required)
        for f in pb[full]:
            entry = by_norm.get(norm(f.name))
            inline = False
            if entry is None and struct is not None:
                if f.msg and not f.repeated and not f.map and f.msg not in SPECIAL_NORM and (
                    inline_fits(pb[f.msg], by_norm, pb)
                ):
                    inline = True
                    js, required = "", False
                else:
                    # A field newer than the served API version: not decoded.
                    dropped.append(f"{full}: {f.name} ({f.number})")
                    continue
            elif entry is None:
                js, required = lower_camel(f.name), False
            else:
                js, required = entry
            fields.append((f, js, required, inline))
            if f.msg:
                queue.append((f.msg, struct if inline else None))
    order.sort()
    index = {full: i for i, full in enumerate(order)}

    used_pointers = set()
    messages = []  # (display name, special, fields)
    for full in order:
        display = display_name(full, oa)
        special = SPECIAL_NORM.get(full, "None")
        fields = []
        for f, js, required, inline in resolved[full]:
            key = f"{display}.{js}"
            pointer = key in pointers
            if pointer:
                used_pointers.add(key)
                if not f.scalar or f.repeated:
                    sys.exit(f"pointer_fields.txt: {key} is not a single scalar")
            fields.append((f, js, required, inline, pointer))
        messages.append((display, special, fields))
    unknown = pointers - used_pointers
    if unknown:
        sys.exit(f"pointer_fields.txt: unknown fields {sorted(unknown)}")

    if report:
        for d in dropped:
            print("DROPPED (newer than the served API)", d)
        opt = []
        for display, special, fields in messages:
            for f, js, required, inline, pointer in fields:
                if f.scalar and not f.repeated and not required:
                    opt.append((f.scalar, f"{display}.{js}", pointer))
        print(f"{len(messages)} messages, {sum(len(m[2]) for m in messages)} fields")
        for scalar, name, pointer in sorted(opt):
            print("OPTIONAL", scalar, name, "pointer" if pointer else "")
        return

    write_table(order, index, messages, kinds, meta_kinds, pb)


SPECIAL_NORM = {}


def inline_fits(fields, by_norm, pb):
    """Whether an embedded message is flattened into the outer struct: most of its
    fields have a JSON name there (directly, or through a further inline embedding).
    Fields newer than the served API version have none, hence "most"."""
    hits = 0
    for f in fields:
        if norm(f.name) in by_norm:
            hits += 1
        elif f.msg and not f.repeated and not f.map and inline_fits(pb[f.msg], by_norm, pb):
            hits += 1
    return bool(fields) and hits * 2 > len(fields)


MODULE_PREFIXES = [
    ("api/", "io.k8s.api."),
    ("apimachinery/pkg/", "io.k8s.apimachinery.pkg."),
    ("apiextensions_apiserver/pkg/", "io.k8s.apiextensions-apiserver.pkg."),
    ("kube_aggregator/pkg/", "io.k8s.kube-aggregator.pkg."),
]


def display_name(full, oa):
    module, _, name = full.rpartition(".")
    own = oa.get((module, norm(name)))
    if own:
        return own.definition
    for prefix, repl in MODULE_PREFIXES:
        if module.startswith(prefix):
            return repl + module[len(prefix):].replace("/", ".") + "." + name
    return full


def normalize_special(pb):
    """Maps the SPECIAL names (Go spelling) onto k8s-pb's prost spelling."""
    by_lower = {}
    for full in pb:
        module, _, name = full.rpartition(".")
        by_lower.setdefault((module, name.lower()), full)
    for key, special in SPECIAL.items():
        module, _, name = key.rpartition(".")
        full = by_lower.get((module, name.lower()))
        if full is None:
            sys.exit(f"special type {key} not found in k8s-pb")
        SPECIAL_NORM[full] = special


SCALAR_KIND = {
    "string": "String",
    "bytes": "Bytes",
    "bool": "Bool",
    "int32": "Int32",
    "int64": "Int64",
    "double": "Double",
}



def write_table(order, index, messages, kinds, meta_kinds, pb):
    out = []
    w = out.append
    w("// @generated by crates/protobuf/gen/gen_schema.py from k8s-pb 0.9 and k8s-openapi 0.29")
    w("// (v1_33). Do not edit by hand: change the generator or gen/pointer_fields.txt and run")
    w("// `python3 crates/protobuf/gen/gen_schema.py`.")
    w("")
    w("use crate::schema::Kind::{Bool, Bytes, Double, Int32, Int64, MapBytes, MapMessage, MapString, Message as Msg, String};")
    w("use crate::schema::{ALWAYS, Field, INLINE, Kind, Message, POINTER, REPEATED, Special};")
    w("")
    w("const fn f(number: u32, json: &'static str, kind: Kind, message: u16, flags: u8) -> Field {")
    w("    Field { number, json, kind, message, flags }")
    w("}")
    w("")
    w("/// Every message reachable from the served kinds, sorted by k8s-pb path.")
    w("pub(crate) static MESSAGES: &[Message] = &[")
    for i, (display, special, fields) in enumerate(messages):
        w(f"    // {i}")
        w(f"    Message {{ name: {rust_str(display)}, special: Special::{special}, fields: &[")
        for f, js, required, inline, pointer in sorted(fields, key=lambda x: x[0].number):
            flags = []
            if f.repeated:
                flags.append("REPEATED")
            if required:
                flags.append("ALWAYS")
            if pointer:
                flags.append("POINTER")
            if inline:
                flags.append("INLINE")
            if f.map:
                key, value = f.map
                if key != "string":
                    sys.exit(f"{display}.{js}: map key {key} unsupported")
                kind = {"message": "MapMessage", "string": "MapString", "bytes": "MapBytes"}[value]
            elif f.msg:
                kind = "Msg"
            else:
                kind = SCALAR_KIND[f.scalar]
            msg = index[f.msg] if f.msg else 0
            flag_text = " | ".join(flags) if flags else "0"
            w(f"        f({f.number}, {rust_str(js)}, {kind}, {msg}, {flag_text}),")
        w("    ] },")
    w("];")
    w("")
    w("/// Served kinds: (apiVersion, kind, index into MESSAGES), sorted.")
    w("pub(crate) static KINDS: &[(&str, &str, u16)] = &[")
    for av, kind, full in sorted(set(kinds)):
        w(f"    ({rust_str(av)}, {rust_str(kind)}, {index[full]}),")
    w("];")
    w("")
    w("/// meta/v1 kinds, accepted with any served apiVersion or meta.k8s.io/v1: (kind, index).")
    w("pub(crate) static META_KINDS: &[(&str, u16)] = &[")
    for kind, full in sorted(meta_kinds):
        w(f"    ({rust_str(kind)}, {index[full]}),")
    w("];")
    w("")
    w("/// The index of runtime.Unknown, the envelope.")
    w(f"pub(crate) const UNKNOWN: u16 = {index['apimachinery/pkg/runtime.Unknown']};")
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    main()
