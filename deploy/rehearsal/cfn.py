"""CloudFormation's intrinsics, resolved offline, for the deploy rehearsal and the role check.

deploy/rehearsal/standup.py resolves the translated template as it creates
each resource in moto (a reference to a resource not created yet raises
NotYet, and the resource waits its turn); deploy/iamcheck.py resolves each
role's policies against the names and ARNs CloudFormation would give the
resources. Both resolve with this one resolver, which refuses (Unresolvable,
naming the logical id and the intrinsic) what it cannot give as CloudFormation
would rather than guess.
"""

import hashlib
import shlex
import tomllib
import uuid

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"


class Unresolvable(Exception):
    """An intrinsic or value the resolver cannot give as CloudFormation would."""

    def __init__(self, logical, what):
        super().__init__(f"{logical}: cannot resolve {what}")


class NotYet(Exception):
    """A reference to a resource not created yet: try this one later."""

    def __init__(self, target):
        super().__init__(target)
        self.target = target


NO_VALUE = object()


class Resolver:
    def __init__(self, template, params, stack_name):
        self.template = template
        self.params = params
        self.stack_name = stack_name
        self.stack_id = f"arn:{PARTITION}:cloudformation:{REGION}:{ACCOUNT}:stack/{stack_name}/" + str(
            uuid.uuid5(uuid.NAMESPACE_URL, stack_name)
        )
        self.created = {}  # logical id -> {"ref": ..., "attrs": {...}}
        self._conditions = {}

    def condition(self, name, logical):
        if name not in self._conditions:
            body = (self.template.get("Conditions") or {}).get(name)
            if body is None:
                raise Unresolvable(logical, f"Condition {name} (not in the template)")
            self._conditions[name] = bool(self.resolve(body, logical))
        return self._conditions[name]

    def ref(self, name, logical):
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::StackName": self.stack_name,
            "AWS::StackId": self.stack_id,
            "AWS::URLSuffix": URL_SUFFIX,
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        if name in self.template["Resources"]:
            if name not in self.created:
                raise NotYet(name)
            return self.created[name]["ref"]
        raise Unresolvable(logical, f"Ref {name}")

    def getatt(self, name, attr, logical):
        if name not in self.template["Resources"]:
            raise Unresolvable(logical, f"Fn::GetAtt {name}.{attr} (no such resource)")
        if name not in self.created:
            raise NotYet(name)
        attrs = self.created[name]["attrs"]
        if attr not in attrs:
            raise Unresolvable(logical, f"Fn::GetAtt {name}.{attr}")
        return attrs[attr]

    def sub(self, text, variables, logical):
        out, i = [], 0
        while i < len(text):
            j = text.find("${", i)
            if j < 0:
                out.append(text[i:])
                break
            out.append(text[i:j])
            k = text.find("}", j)
            if k < 0:
                raise Unresolvable(logical, f"Fn::Sub {text!r}")
            name = text[j + 2 : k]
            if name.startswith("!"):
                out.append("${" + name[1:] + "}")
            elif name in variables:
                out.append(str(self.resolve(variables[name], logical)))
            elif "." in name:
                res, attr = name.split(".", 1)
                out.append(str(self.getatt(res, attr, logical)))
            else:
                v = self.ref(name, logical)
                if isinstance(v, list) or v is NO_VALUE:
                    raise Unresolvable(logical, f"Fn::Sub ${{{name}}} (not a string)")
                out.append(str(v))
            i = k + 1
        return "".join(out)

    def resolve(self, v, logical):
        if isinstance(v, list):
            out = [self.resolve(x, logical) for x in v]
            return [x for x in out if x is not NO_VALUE]
        if not isinstance(v, dict):
            return v
        if len(v) == 1:
            (fn, arg), = v.items()
            if fn == "Ref":
                return self.ref(arg, logical)
            if fn == "Fn::GetAtt":
                name, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.getatt(name, attr, logical)
            if fn == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return self.sub(text, variables, logical)
            if fn == "Fn::If":
                cond, yes, no = arg
                return self.resolve(yes if self.condition(cond, logical) else no, logical)
            if fn == "Fn::Join":
                sep, parts = arg
                parts = self.resolve(parts, logical)
                return sep.join(str(p) for p in parts)
            if fn == "Fn::Select":
                idx, items = self.resolve(arg[0], logical), self.resolve(arg[1], logical)
                return items[int(idx)]
            if fn == "Fn::Split":
                sep, text = arg[0], self.resolve(arg[1], logical)
                return text.split(sep)
            if fn == "Fn::Equals":
                a, b = (self.resolve(x, logical) for x in arg)
                return str(a) == str(b) if not (isinstance(a, list) or isinstance(b, list)) else a == b
            if fn == "Fn::Not":
                return not self.resolve(arg[0], logical)
            if fn == "Fn::And":
                return all(self.resolve(x, logical) for x in arg)
            if fn == "Fn::Or":
                return any(self.resolve(x, logical) for x in arg)
            if fn == "Condition":
                return self.condition(arg, logical)
            if fn.startswith("Fn::"):
                raise Unresolvable(logical, fn)
        out = {}
        for k, x in v.items():
            r = self.resolve(x, logical)
            if r is not NO_VALUE:
                out[k] = r
        return out


def parameters(template, samconfig, env, overrides=None):
    """The template's parameter values: samconfig [env]'s parameter_overrides
    over the defaults, and `overrides` ("Key=Value" strings, as `sam deploy
    --parameter-overrides` gives them) over both."""
    with open(samconfig, "rb") as f:
        deploy = tomllib.load(f)[env]["deploy"]["parameters"]
    given = {}
    po = deploy.get("parameter_overrides", "")
    for pair in (shlex.split(po) if isinstance(po, str) else po) + list(overrides or []):
        k, _, val = pair.partition("=")
        given[k] = val
    params = {}
    for name, p in template.get("Parameters", {}).items():
        if name in given:
            val = given.pop(name)
        elif "Default" in p:
            val = p["Default"]
        else:
            raise Unresolvable("Parameters", f"Ref {name} (no default and not in samconfig [{env}])")
        val = str(val)
        params[name] = val.split(",") if p["Type"] in ("CommaDelimitedList",) or p["Type"].startswith("List<") else val
    if given:
        raise Unresolvable("Parameters", f"samconfig [{env}] names {sorted(given)}, not parameters of the template")
    return params, deploy["stack_name"]


def physical_name(stack, logical, limit=64, lower=False):
    """A CloudFormation-like generated name: stack, logical id, a stable suffix."""
    suffix = hashlib.sha256(f"{stack}/{logical}".encode()).hexdigest()[:12].upper()
    name = f"{stack}-{logical}"[: limit - 13] + "-" + suffix
    return name.lower() if lower else name
