#!/usr/bin/env python3
"""Check the AWS calls each function made against its role, with moto's IAM evaluator.

Input: the translated template (deploy/translate.py --out), and a JSON file of
the calls the functions made (internal/awscalls: function, action, resource,
condition values), as pkg/handlers' TestRolesCoverCalls records them:

    {"names": {"<name on the test stack>": "<logical id>"}, "calls": [...]}

"names" maps the test stack's own resource names (its table, its bus) to the
template's resources, whose names are then those CloudFormation would give
them on the stack of samconfig.toml [default] (account 123456789012, Region
us-east-1).

Each role's policies are resolved as CloudFormation would resolve them (Ref,
Fn::GetAtt, Fn::Sub, Fn::If, Fn::Join, Fn::Select, Fn::Split, the template's
Conditions) with the parameters' defaults and [default]'s
parameter_overrides. Each call is then evaluated with
moto.iam.access_control.IAMPolicy, the whole policy (allowed or not) and each
statement alone (which statements allow it).

moto's evaluator matches Action, NotAction and Resource (with * wildcards) and
evaluates only the StringEquals operator, and only for condition keys the call
supplies a value for: any other operator (StringLike, Null, ForAllValues:...,
Bool, ...), and a StringEquals key the call does not supply, it passes. So for
each call the output names, for the statement that allows it, every condition
it did not evaluate ("not evaluated: <operator>:<key>") rather than count it
as checked.

Usage: deploy/iamcheck.py TRANSFORMED.json CALLS.json [--samconfig samconfig.toml]
Prints JSON (pkg/handlers' TestRolesCoverCalls writes docs/DEPLOY.md's tables from it):

    {"functions": {"Invoke": {"role": "InvokeRole",
        "calls": [{"action", "resource", "operations", "allowed_by", "also_allowed_by", "conditions_not_evaluated"}],
        "denied": [{"action", "resource"}],
        "unused": [statement ids no call needed],
        "removal": [{"statement", "denied": [{"action", "resource"}]}],
        "redundant": [statements whose every call another statement also allows]}}}

Exits 0 whatever it finds: the caller (the Go test) decides what fails.
"""

import argparse
import hashlib
import json
import logging
import os
import sys

logging.disable(logging.WARNING)

from moto.iam.access_control import IAMPolicy, PermissionResult  # noqa: E402

# The one resolver of CloudFormation's intrinsics, which the rehearsal's
# stand-up uses too (deploy/rehearsal/cfn.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "rehearsal"))
from cfn import ACCOUNT, PARTITION, REGION, URL_SUFFIX, Resolver, Unresolvable, parameters, physical_name  # noqa: E402

# The only condition operator moto evaluates.
EVALUATED_OPERATOR = "StringEquals"
# The properties that name a resource; without one CloudFormation generates a
# name (physical_name, as the stand-up does).
NAME_PROPERTIES = ("TableName", "QueueName", "BucketName", "Name", "LogGroupName", "TopicName", "FunctionName",
                   "RoleName")
# The longest name CloudFormation generates for each type (as the stand-up does).
NAME_LIMITS = {"AWS::S3::Bucket": 63, "AWS::DynamoDB::Table": 255, "AWS::SQS::Queue": 80, "AWS::SNS::Topic": 256,
               "AWS::Logs::LogGroup": 512}


class Template:
    """The translated template's resources, each with the Ref and Fn::GetAtt values
    CloudFormation would give it on samconfig's stack, and the resolver over them."""

    def __init__(self, template, params, stack):
        self.resources = template.get("Resources", {})
        self.stack = stack
        self.resolver = Resolver(template, params, stack)
        for logical in self.resources:
            self.resolver.created[logical] = {"ref": self.ref(logical), "attrs": self.attrs(logical)}

    def resolve(self, v, logical="iamcheck"):
        return self.resolver.resolve(v, logical)

    def name(self, logical):
        """The physical name CloudFormation gives logical: its name property, else a generated one."""
        rsc = self.resources[logical]
        props = rsc.get("Properties", {})
        for key in NAME_PROPERTIES:
            if key in props:
                return self.resolve(props[key], logical)
        limit = NAME_LIMITS.get(rsc["Type"], 64)
        return physical_name(self.stack, logical, limit, lower=rsc["Type"] == "AWS::S3::Bucket")

    def ident(self, logical):
        """What names logical in its ARN: a KMS key's id, else its name."""
        if self.resources[logical]["Type"] == "AWS::KMS::Key":
            return self.key_id(logical)
        return self.name(logical)

    def key_id(self, logical):
        h = hashlib.sha256(logical.encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def ref(self, logical):
        typ = self.resources[logical]["Type"]
        if typ == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.{URL_SUFFIX}/{ACCOUNT}/{self.name(logical)}"
        if typ == "AWS::KMS::Key":
            return self.key_id(logical)
        if typ == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{self.name(logical)}"
        if typ == "AWS::KMS::Alias":
            return self.resolve(self.resources[logical]["Properties"]["AliasName"], logical)
        return self.name(logical)

    def attrs(self, logical):
        typ = self.resources[logical]["Type"]
        n = self.name(logical)
        return {
            "AWS::DynamoDB::Table": {"Arn": f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{n}",
                                     "StreamArn": f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{n}/stream/2026-01-01T00:00:00.000"},
            "AWS::SQS::Queue": {"Arn": f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{n}", "QueueName": n},
            "AWS::KMS::Key": {"Arn": f"arn:{PARTITION}:kms:{REGION}:{ACCOUNT}:key/{self.key_id(logical)}",
                              "KeyId": self.key_id(logical)},
            "AWS::S3::Bucket": {"Arn": f"arn:{PARTITION}:s3:::{n}"},
            "AWS::Events::EventBus": {"Arn": f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:event-bus/{n}"},
            "AWS::Logs::LogGroup": {"Arn": f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{n}:*"},
            "AWS::SNS::Topic": {"TopicArn": f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{n}"},
            "AWS::Lambda::Function": {"Arn": f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{n}"},
            "AWS::IAM::Role": {"Arn": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{n}"},
        }.get(typ, {})  # any other attribute: Unresolvable, naming it


def statements(tpl, role):
    """The role's statements, resolved, each with a label: its Sid, else <policy>[index]."""
    out = []
    for policy in tpl.resources[role]["Properties"].get("Policies", []):
        doc = tpl.resolve(policy["PolicyDocument"])
        for i, st in enumerate(doc["Statement"]):
            out.append((st.get("Sid") or f"{policy['PolicyName']}[{i}]", st))
    if tpl.resources[role]["Properties"].get("ManagedPolicyArns"):
        raise SystemExit(f"iamcheck: {role} has managed policies, which this check cannot read")
    return out


# Condition keys whose value comes from the request itself, which
# internal/awscalls records whenever the request sets them; a call without one
# lacks it, as IAM sees it. kms:ViaService is set only on a call a service makes
# for the caller; the functions call KMS themselves. Other keys (kms:KeySpec,
# aws:SecureTransport, ...) AWS sets from elsewhere: the check never supplies
# them, so a condition on them is reported not evaluated.
REQUEST_KEYS = ("kms:EncryptionContext:", "kms:ViaService", "kms:MessageType", "kms:SigningAlgorithm",
                "kms:MacAlgorithm", "kms:DataKeySpec", "s3:prefix")
# IAM: a condition on a key the request lacks does not match (but for
# ...IfExists and Null). moto takes a dict of present keys and passes a
# StringEquals on a missing one, so a missing request key is given to it as
# a value no policy names.
ABSENT = "(absent from the request)"


def incoming(call, st=None):
    """The call's condition values as moto takes them: one string per key, and ABSENT for the
    request keys st's StringEquals names that the call lacks."""
    given = {k: v[0] for k, v in (call.get("conditions") or {}).items() if len(v) == 1}
    for key in ((st or {}).get("Condition") or {}).get(EVALUATED_OPERATOR, {}):
        if key not in given and key.startswith(REQUEST_KEYS):
            given[key] = ABSENT
    return given


def permitted(stmts, call):
    """Whether stmts allow call: each statement evaluated alone by moto, then IAM's rule (an
    explicit Deny wins, else any Allow). Alone, because moto answers DENIED for an Allow statement
    whose condition fails, which in one policy would refuse what another statement allows."""
    allowed = False
    for st in stmts:
        policy = json.dumps({"Version": "2012-10-17", "Statement": [st]})
        r = IAMPolicy(policy).is_action_permitted(call["action"], call["resource"], None, incoming(call, st))
        if r == PermissionResult.DENIED and st.get("Effect") == "Deny":
            return False
        allowed = allowed or r == PermissionResult.PERMITTED
    return allowed


def not_evaluated(st, call):
    given = incoming(call, st)
    out = []
    for op, keys in (st.get("Condition") or {}).items():
        for key in keys:
            if not (op == EVALUATED_OPERATOR and key in given):
                out.append(f"{op}:{key}")
    return sorted(out)


def check(tpl, calls):
    roles = {}
    for logical, rsc in tpl.resources.items():
        if rsc["Type"] == "AWS::Lambda::Function" and logical.endswith("Function"):
            role = rsc["Properties"].get("Role")
            if isinstance(role, dict) and "Fn::GetAtt" in role:
                roles[logical[: -len("Function")]] = role["Fn::GetAtt"][0]
    by_fn = {}
    for c in calls:
        by_fn.setdefault(c["function"], []).append(c)
    out = {}
    for fn in sorted(by_fn):
        if fn not in roles:
            raise SystemExit(f"iamcheck: no function {fn}Function with a role of its own in the template")
        stmts = statements(tpl, roles[fn])
        # One row per (action, resource): the operations that needed it are
        # listed together; condition values differ by call, so each is
        # evaluated and the row is allowed only if every one is.
        rows = {}
        for c in by_fn[fn]:
            rows.setdefault((c["action"], c["resource"]), []).append(c)
        result = {"role": roles[fn], "calls": [], "denied": [], "unused": [], "removal": [], "redundant": []}
        needed = {}
        for (action, resource), cs in sorted(rows.items()):
            ops = sorted({c["service"] + " " + c["operation"] for c in cs})
            allowed_by, conds = [], set()
            ok = all(permitted([st for _, st in stmts], c) for c in cs)
            for sid, st in stmts:
                if all(permitted([st], c) for c in cs):
                    allowed_by.append(sid)
                    for c in cs:
                        conds.update(not_evaluated(st, c))
                    needed.setdefault(sid, []).append((action, resource))
            row = {"action": action, "resource": resource, "operations": ops}
            if ok and allowed_by:
                row.update(allowed_by=allowed_by[0], also_allowed_by=allowed_by[1:],
                           conditions_not_evaluated=sorted(conds))
                result["calls"].append(row)
            else:
                result["denied"].append({"action": action, "resource": resource, "operations": ops})
        result["unused"] = [sid for sid, _ in stmts if sid not in needed]
        for sid in [s for s, _ in stmts if s in needed]:
            rest = [st for s, st in stmts if s != sid]
            denied = [{"action": a, "resource": r} for (a, r) in sorted(rows)
                      if (a, r) in needed[sid] and not all(permitted(rest, c) for c in rows[(a, r)])]
            result["removal"].append({"statement": sid, "denied": denied})
            if not denied:
                result["redundant"].append(sid)
        out[fn] = result
    return {"functions": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("transformed")
    ap.add_argument("calls")
    ap.add_argument("--samconfig", default=os.path.join(os.path.dirname(__file__), "..", "samconfig.toml"))
    args = ap.parse_args()
    with open(args.transformed, encoding="utf-8") as f:
        template = json.load(f)
    with open(args.calls, encoding="utf-8") as f:
        recorded = json.load(f)
    try:
        params, stack = parameters(template, args.samconfig, "default")
        tpl = Template(template, params, stack)
    except Unresolvable as e:
        raise SystemExit(f"iamcheck: {e}")
    names = recorded.get("names") or {}
    calls = []
    for c in recorded["calls"]:
        c = dict(c)
        for local, logical in names.items():
            c["resource"] = rename(c["resource"], local, tpl.ident(logical))
        calls.append(c)
    report = check(tpl, calls)
    json.dump(report, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


def rename(arn, local, name):
    """arn with the segment local (a whole name between ARN separators) replaced by name."""
    seps = ":/"
    i = arn.find(local)
    while i >= 0:
        end = i + len(local)
        if (i == 0 or arn[i - 1] in seps) and (end == len(arn) or arn[end] in seps):
            return arn[:i] + name + arn[end:]
        i = arn.find(local, i + 1)
    return arn


if __name__ == "__main__":
    sys.exit(main())
