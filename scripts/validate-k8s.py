#!/usr/bin/env python3
"""Validates deploy/k8s/*.yaml offline, strictly: Kubernetes' own kinds against the pinned
Kubernetes schema that kubernetes-validate bundles (unknown fields are errors), and the
CassandraDatacenter against cass-operator's CRD schema (deploy/k8s/schemas/, with unknown
fields made errors too, as `kubectl apply --validate=strict` does).

    scripts/validate-k8s.py              validate every manifest
    scripts/validate-k8s.py --self-test  also check that a misspelled field in each manifest is
                                         rejected (a validator that accepts anything proves
                                         nothing)
    scripts/validate-k8s.py --extract-crd CRD.yaml SOURCE
                                         writes the CRD's schema under deploy/k8s/schemas/
                                         (SOURCE: where it came from, kept in the file)

Needs the PyPI package kubernetes-validate (scripts/setup.sh --test installs it).
"""

import copy
import gzip
import json
import pathlib
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES = "1.33.0"
ROOT = pathlib.Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
CRDS = {
    ("cassandra.datastax.com/v1beta1", "CassandraDatacenter"): K8S / "schemas" / "cassandradatacenter-v1beta1.json.gz",
    ("monitoring.coreos.com/v1", "PodMonitor"): K8S / "schemas" / "podmonitor-v1.json.gz",
}


def strict(schema):
    """The schema with every object that lists its properties closed to others. A field that
    preserves unknown fields keeps whatever it is given: cass-operator's `config` is declared a
    string (a raw JSON message) and written as an object in every sample, which the API server
    takes."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if out.get("x-kubernetes-preserve-unknown-fields") and out.get("type") == "string":
            out.pop("type")
            out.pop("format", None)
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def crd_schema(path):
    with gzip.open(path, "rt") as f:
        return strict(json.load(f)["schema"])


def errors(doc):
    """What is wrong with one manifest document (empty when it is valid)."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in CRDS:
        validator = jsonschema.Draft7Validator(crd_schema(CRDS[key]))
        return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(doc)]
    try:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no schema for {key[1]} {key[0]} in Kubernetes {KUBERNETES}: {e}"]
    return []


# Maps whose keys are the user's to choose: a new key in them is not a misspelling.
FREE_FORM = {"requests", "limits", "labels", "annotations", "matchLabels", "data", "config", "cassandra-yaml",
             "jvm-server-options"}


def misspelled(doc):
    """Copies of `doc` with one field misspelled (its last letter doubled): the first field of
    its spec (its metadata, for a kind without one: a ConfigMap), and one deep inside it
    (following the last nested field at each level down)."""
    copies = []
    root = "spec" if "spec" in doc else "metadata"
    for deep in (False, True):
        broken = copy.deepcopy(doc)
        node, path = broken[root], [root]
        while deep:
            nested = [k for k, v in node.items() if k not in FREE_FORM and isinstance(v, (dict, list)) and v]
            if not nested:
                break
            last = nested[-1]
            child = node[last]
            if isinstance(child, list):
                if not isinstance(child[0], dict):
                    break
                node, path = child[0], path + [last, "0"]
            else:
                node, path = child, path + [last]
        key = next(iter(node))
        node[key + key[-1]] = node.pop(key)
        where = ".".join(path)
        copies.append((broken, f"{where}.{key} -> {where}.{key + key[-1]}"))
    return copies


def extract_crd(crd_path, source):
    """Writes the schema of each served version of a CRD (YAML) to schemas/<kind>-<version>.json.gz."""
    crd = yaml.safe_load(pathlib.Path(crd_path).read_text())
    spec = crd["spec"]
    for version in spec["versions"]:
        kind, name = spec["names"]["kind"], version["name"]
        out = K8S / "schemas" / f"{kind.lower()}-{name}.json.gz"
        doc = {
            "$comment": f"openAPIV3Schema of {kind} {spec['group']}/{name}, from {source}; Apache License 2.0. "
            "Regenerate with scripts/validate-k8s.py --extract-crd CRD.yaml SOURCE",
            "schema": version["schema"]["openAPIV3Schema"],
        }
        with gzip.GzipFile(out, "wb", mtime=0) as f:
            f.write(json.dumps(doc, sort_keys=True).encode())
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


def main(args):
    if args[:1] == ["--extract-crd"] and len(args) == 3:
        return extract_crd(args[1], args[2])
    self_test = "--self-test" in args
    manifests = sorted(K8S.glob("*.yaml"))
    if not manifests:
        print(f"no manifests under {K8S}", file=sys.stderr)
        return 1
    failed = False
    for path in manifests:
        for i, doc in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
            name = f"{path.relative_to(ROOT)} #{i + 1} ({doc.get('kind')})"
            found = errors(doc)
            if found:
                failed = True
                print(f"INVALID {name}:", *found, sep="\n  ")
            else:
                print(f"valid   {name}")
            for broken, what in misspelled(doc) if self_test else []:
                if errors(broken):
                    print(f"  a broken copy ({what}) is rejected")
                else:
                    failed = True
                    print(f"  ACCEPTED a broken copy ({what}): the validation is not strict")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
