#!/usr/bin/env python3
"""Stand the translated template's resources up in moto, as CloudFormation would.

Reads the SAM transform's output (deploy/translate.py template.yaml --out FILE)
and samconfig.toml's [ENV] stack name and parameter_overrides, and creates every
resource the functions depend on through each service's own API on a moto server
(deploy/rehearsal/moto_iam.py): the KMS keys and alias, the log groups, the
table (keys, indexes, stream, point-in-time recovery, encryption), the queues
and their policies, the checkpoint bucket (Object Lock, versioning, encryption,
public access block, ownership), its policy, the topics and topic policy, the
bus and its rule with its targets, the HTTP API (for its id), each role exactly
as translated (trust policy and inline policies, every intrinsic resolved to the
ARNs of what was created) and each function (its resolved environment, under its
role). docs/DECISIONS.md says which resource types are left out and why (moto's
CloudFormation stalls on the translated template, so none goes through it).

Intrinsics (Ref, Fn::GetAtt, Fn::Sub, Fn::If, Fn::Join, Fn::Select, Fn::Split,
Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition) and the pseudo parameters are
resolved here; anything else, or a parameter without a value, stops the run
(exit 1) naming the logical id and the intrinsic, rather than guessing.

Everything is created unchecked (moto's enforcement starts off); then each
function's role is assumed (STS on moto) and enforcement is turned on
(/moto-api/reset-auth 0): every request after this is authorized.

Prints (or writes to --out) one JSON document: the endpoint, an administrator's
access key (an IAM user allowed everything, for checks from outside), each
resource's physical id and attributes, and per function (logical id) its name,
ARN, role, the role's policies as created, its resolved Environment.Variables and
the temporary credentials of its role.

Usage: deploy/rehearsal/standup.py --endpoint URL --translated FILE
           [--samconfig samconfig.toml] [--config-env default] [--parameter KEY=VALUE ...] [--out FILE]
--parameter sets a template parameter over samconfig's, as `sam deploy
--parameter-overrides` does (the rehearsal's walk names its tool catalog's
SSM parameter and the firm's tool function so).
       deploy/rehearsal/standup.py --state FILE --without FUNCTION:SID
The second form, on a stack already stood up (FILE is the first form's output),
puts the function's role policies back without the statement SID (as the
administrator, under enforcement), and prints the statement it removed: the
removal proof's half (a call that statement allowed must now be denied).
"""

import argparse
import io
import json
import sys
import time
import urllib.request
import zipfile

import boto3
from botocore.config import Config

from cfn import ACCOUNT, PARTITION, REGION, URL_SUFFIX, NotYet, Resolver, Unresolvable, parameters, physical_name

# Resource types that no function calls or reads from its environment, so the
# rehearsal does not stand them up (docs/DECISIONS.md, issue 28: the routes).
NOT_STOOD_UP = {
    "AWS::Lambda::Permission",
    "AWS::Lambda::EventSourceMapping",
    "AWS::CloudWatch::Alarm",
    "AWS::ApiGatewayV2::Stage",
    "AWS::Scheduler::Schedule",
}


class Standup:
    def __init__(self, endpoint, template, resolver):
        self.endpoint = endpoint
        self.template = template
        self.r = resolver
        self.stack = resolver.stack_name
        cfg = Config(retries={"max_attempts": 2, "mode": "standard"})
        self.session = boto3.session.Session(
            aws_access_key_id="rehearsal-setup", aws_secret_access_key="rehearsal-setup", region_name=REGION
        )
        self.clients = {}
        self.cfg = cfg
        self.calls = 0
        self.omitted = []  # what is left out of a resource, and why

    def c(self, service):
        if service not in self.clients:
            client = self.session.client(service, endpoint_url=self.endpoint, config=self.cfg)
            client.meta.events.register("before-send", self._count)
            self.clients[service] = client
        return self.clients[service]

    def _count(self, **_):
        self.calls += 1

    def arn(self, service, resource):
        return f"arn:{PARTITION}:{service}:{REGION}:{ACCOUNT}:{resource}"

    # ---- one method per resource type: create it, return its Ref and attributes ----

    def kms_key(self, logical, p):
        args = {"Description": p.get("Description", ""), "KeyUsage": p.get("KeyUsage", "ENCRYPT_DECRYPT")}
        args["KeySpec"] = p.get("KeySpec", "SYMMETRIC_DEFAULT")
        if "KeyPolicy" in p:
            args["Policy"] = json.dumps(p["KeyPolicy"])
        meta = self.c("kms").create_key(**args)["KeyMetadata"]
        if p.get("EnableKeyRotation"):
            self.c("kms").enable_key_rotation(KeyId=meta["KeyId"])
        return meta["KeyId"], {"Arn": meta["Arn"], "KeyId": meta["KeyId"]}

    def kms_alias(self, logical, p):
        self.c("kms").create_alias(AliasName=p["AliasName"], TargetKeyId=p["TargetKeyId"])
        return p["AliasName"], {}

    def log_group(self, logical, p):
        name = p.get("LogGroupName") or physical_name(self.stack, logical, 512)
        args = {"logGroupName": name}
        if p.get("KmsKeyId"):
            args["kmsKeyId"] = p["KmsKeyId"]
        self.c("logs").create_log_group(**args)
        if "RetentionInDays" in p:
            self.c("logs").put_retention_policy(logGroupName=name, retentionInDays=int(p["RetentionInDays"]))
        return name, {"Arn": self.arn("logs", f"log-group:{name}:*")}

    def table(self, logical, p):
        name = p.get("TableName") or physical_name(self.stack, logical, 255)
        args = {
            "TableName": name,
            "AttributeDefinitions": p["AttributeDefinitions"],
            "KeySchema": p["KeySchema"],
            "BillingMode": p.get("BillingMode", "PROVISIONED"),
        }
        if p.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = p["GlobalSecondaryIndexes"]
        if p.get("StreamSpecification"):
            args["StreamSpecification"] = {"StreamEnabled": True, **p["StreamSpecification"]}
        sse = p.get("SSESpecification")
        if sse:
            args["SSESpecification"] = {"Enabled": bool(sse.get("SSEEnabled"))}
            for src, dst in (("SSEType", "SSEType"), ("KMSMasterKeyId", "KMSMasterKeyId")):
                if src in sse:
                    args["SSESpecification"][dst] = sse[src]
        if "DeletionProtectionEnabled" in p:
            args["DeletionProtectionEnabled"] = bool(p["DeletionProtectionEnabled"])
        desc = self.c("dynamodb").create_table(**args)["TableDescription"]
        pitr = p.get("PointInTimeRecoverySpecification")
        if pitr:
            self.c("dynamodb").update_continuous_backups(
                TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": bool(pitr["PointInTimeRecoveryEnabled"])}
            )
        ttl = p.get("TimeToLiveSpecification")
        if ttl:
            self.c("dynamodb").update_time_to_live(
                TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": bool(ttl["Enabled"])}
            )
        attrs = {"Arn": desc["TableArn"]}
        if desc.get("LatestStreamArn"):
            attrs["StreamArn"] = desc["LatestStreamArn"]
        return name, attrs

    def queue(self, logical, p):
        name = p.get("QueueName") or physical_name(self.stack, logical, 80)
        attrs = {}
        for key in ("KmsMasterKeyId", "MessageRetentionPeriod", "VisibilityTimeout", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"):
            if key in p:
                attrs[key] = str(p[key])
        if "RedrivePolicy" in p:
            attrs["RedrivePolicy"] = json.dumps(p["RedrivePolicy"])
        url = self.c("sqs").create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]
        arn = self.c("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, {"Arn": arn, "QueueName": name, "QueueUrl": url}

    def queue_policy(self, logical, p):
        for url in p["Queues"]:
            self.c("sqs").set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])})
        return logical, {}

    def bucket(self, logical, p):
        name = p.get("BucketName") or physical_name(self.stack, logical, 63, lower=True)
        s3 = self.c("s3")
        s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=bool(p.get("ObjectLockEnabled")))
        if p.get("VersioningConfiguration"):
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": p["VersioningConfiguration"]["Status"]})
        olc = p.get("ObjectLockConfiguration")
        if olc and olc.get("Rule"):
            ret = dict(olc["Rule"]["DefaultRetention"])
            for unit in ("Days", "Years"):
                if unit in ret:
                    ret[unit] = int(ret[unit])
            s3.put_object_lock_configuration(
                Bucket=name, ObjectLockConfiguration={"ObjectLockEnabled": olc.get("ObjectLockEnabled", "Enabled"), "Rule": {"DefaultRetention": ret}}
            )
        if p.get("BucketEncryption"):
            # CloudFormation's ServerSideEncryptionByDefault is the API's ApplyServerSideEncryptionByDefault.
            rules = [
                {("ApplyServerSideEncryptionByDefault" if k == "ServerSideEncryptionByDefault" else k): v for k, v in rule.items()}
                for rule in p["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            ]
            s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
        if p.get("PublicAccessBlockConfiguration"):
            s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=p["PublicAccessBlockConfiguration"])
        if p.get("OwnershipControls"):
            s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=p["OwnershipControls"])
        return name, {"Arn": f"arn:{PARTITION}:s3:::{name}", "DomainName": f"{name}.s3.{URL_SUFFIX}"}

    def bucket_policy(self, logical, p):
        # Not put. moto evaluates a bucket policy on every object request but
        # skips the conditions it does not implement (Bool, Null), so the
        # template's two conditional Deny statements (no TLS; a PutObject
        # without If-None-Match) would deny every request. The template test
        # checks the statements; a real deploy enforces them.
        print(f"standup: {logical}: not put (moto would apply its conditional Deny statements unconditionally)", file=sys.stderr)
        self.omitted.append({"resource": logical, "why": "moto skips the Bool and Null conditions of its Deny statements"})
        return logical, {}

    def topic(self, logical, p):
        name = p.get("TopicName") or physical_name(self.stack, logical, 256)
        attrs = {k: str(p[k]) for k in ("DisplayName", "KmsMasterKeyId") if k in p}
        arn = self.c("sns").create_topic(Name=name, Attributes=attrs)["TopicArn"]
        return arn, {"TopicArn": arn, "TopicName": name}

    def topic_policy(self, logical, p):
        for arn in p["Topics"]:
            self.c("sns").set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps(p["PolicyDocument"]))
        return logical, {}

    def subscription(self, logical, p):
        arn = self.c("sns").subscribe(TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=p["Endpoint"])["SubscriptionArn"]
        return arn, {}

    def event_bus(self, logical, p):
        arn = self.c("events").create_event_bus(Name=p["Name"])["EventBusArn"]
        return p["Name"], {"Arn": arn, "Name": p["Name"]}

    def rule(self, logical, p):
        name = p.get("Name") or physical_name(self.stack, logical, 64)
        args = {"Name": name, "State": p.get("State", "ENABLED")}
        for key in ("Description", "EventBusName", "ScheduleExpression"):
            if key in p:
                args[key] = p[key]
        if "EventPattern" in p:
            args["EventPattern"] = json.dumps(p["EventPattern"])
        arn = self.c("events").put_rule(**args)["RuleArn"]
        if p.get("Targets"):
            targets = []
            for t in p["Targets"]:
                t = dict(t)
                if t["Arn"].startswith(f"arn:{PARTITION}:sns:"):
                    # moto's EventBridge delivers to no SNS topic: PutEvents on a
                    # bus whose rule targets one fails (NotImplementedError, 500).
                    print(f"standup: {logical}: target {t['Id']} (an SNS topic) left out: moto cannot deliver to SNS", file=sys.stderr)
                    self.omitted.append({"resource": logical, "target": t["Id"], "why": "moto's EventBridge cannot deliver to an SNS topic"})
                    continue
                if "Input" in t and not isinstance(t["Input"], str):
                    t["Input"] = json.dumps(t["Input"])
                targets.append(t)
            extra = {"EventBusName": p["EventBusName"]} if "EventBusName" in p else {}
            out = self.c("events").put_targets(Rule=name, Targets=targets, **extra) if targets else {}
            if out.get("FailedEntryCount"):
                raise RuntimeError(f"{logical}: targets refused: {out['FailedEntries']}")
        ref = f"{p['EventBusName']}|{name}" if p.get("EventBusName") not in (None, "default") else name
        return ref, {"Arn": arn}

    def http_api(self, logical, p):
        # Only its id is read (DESK_URL); the OpenAPI body is not imported.
        api = self.c("apigatewayv2").create_api(Name=self.stack, ProtocolType="HTTP")
        return api["ApiId"], {"ApiEndpoint": api.get("ApiEndpoint", "")}

    def role(self, logical, p):
        name = p.get("RoleName") or physical_name(self.stack, logical, 64)
        iam = self.c("iam")
        args = {"RoleName": name, "AssumeRolePolicyDocument": json.dumps(p["AssumeRolePolicyDocument"]), "Path": p.get("Path", "/")}
        if "Description" in p:
            args["Description"] = p["Description"]
        arn = iam.create_role(**args)["Role"]["Arn"]
        for pol in p.get("Policies", []):
            doc = pol["PolicyDocument"]
            if "Version" not in doc:
                # IAM takes a document without Version (the 2008-10-17 grammar);
                # moto refuses it. SAM writes the schedule's role so; nothing in
                # it uses what the versions differ in (policy variables).
                doc = {"Version": "2012-10-17", **doc}
                print(f"standup: {logical} policy {pol['PolicyName']}: no Version; created as 2012-10-17 (moto refuses none)", file=sys.stderr)
                self.omitted.append({"resource": logical, "policy": pol["PolicyName"], "why": "no Version: created as 2012-10-17, which moto requires"})
            iam.put_role_policy(RoleName=name, PolicyName=pol["PolicyName"], PolicyDocument=json.dumps(doc))
        for managed in p.get("ManagedPolicyArns", []):
            iam.attach_role_policy(RoleName=name, PolicyArn=managed)
        return name, {"Arn": arn, "RoleId": name, "Policies": {pol["PolicyName"]: pol["PolicyDocument"] for pol in p.get("Policies", [])}}

    def function(self, logical, p):
        name = p.get("FunctionName") or physical_name(self.stack, logical, 64)
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as z:
            z.writestr("bootstrap", "#!/bin/sh\n# placeholder: the rehearsal does not run functions in moto's Lambda\n")
        args = {
            "FunctionName": name,
            "Runtime": p["Runtime"],
            "Role": p["Role"],
            "Handler": p.get("Handler", "bootstrap"),
            "Code": {"ZipFile": code.getvalue()},
            "Timeout": int(p.get("Timeout", 3)),
            "MemorySize": int(p.get("MemorySize", 128)),
            "Environment": {"Variables": {k: str(v) for k, v in (p.get("Environment") or {}).get("Variables", {}).items()}},
            "Architectures": p.get("Architectures", ["x86_64"]),
        }
        arn = self.c("lambda").create_function(**args)["FunctionArn"]
        return name, {"Arn": arn, "Environment": args["Environment"]["Variables"], "Role": p["Role"]}

    HANDLERS = {
        "AWS::KMS::Key": kms_key,
        "AWS::KMS::Alias": kms_alias,
        "AWS::Logs::LogGroup": log_group,
        "AWS::DynamoDB::Table": table,
        "AWS::SQS::Queue": queue,
        "AWS::SQS::QueuePolicy": queue_policy,
        "AWS::S3::Bucket": bucket,
        "AWS::S3::BucketPolicy": bucket_policy,
        "AWS::SNS::Topic": topic,
        "AWS::SNS::TopicPolicy": topic_policy,
        "AWS::SNS::Subscription": subscription,
        "AWS::Events::EventBus": event_bus,
        "AWS::Events::Rule": rule,
        "AWS::ApiGatewayV2::Api": http_api,
        "AWS::IAM::Role": role,
        "AWS::Lambda::Function": function,
    }

    def run(self):
        todo = []
        for logical, res in self.template["Resources"].items():
            if "Condition" in res and not self.r.condition(res["Condition"], logical):
                continue
            if res["Type"] in NOT_STOOD_UP:
                continue
            if res["Type"] not in self.HANDLERS:
                raise Unresolvable(logical, f"resource type {res['Type']} (no route)")
            todo.append(logical)
        # Create whatever resolves; a reference to something not created yet
        # puts it back for the next round, as CloudFormation orders by reference.
        while todo:
            waiting = []
            for logical in todo:
                res = self.template["Resources"][logical]
                props = dict(res.get("Properties", {}))
                if res["Type"] == "AWS::ApiGatewayV2::Api":
                    props.pop("Body", None)  # names the functions; not imported (see http_api)
                try:
                    props = self.r.resolve(props, logical)
                except NotYet as e:
                    waiting.append((logical, e.target))
                    continue
                ref, attrs = self.HANDLERS[res["Type"]](self, logical, props)
                self.r.created[logical] = {"type": res["Type"], "ref": ref, "attrs": attrs}
            if len(waiting) == len(todo):
                raise Unresolvable(waiting[0][0], "references in a cycle: " + ", ".join(f"{a} -> {b}" for a, b in waiting))
            todo = [logical for logical, _ in waiting]

    def admin(self):
        iam = self.c("iam")
        iam.create_user(UserName="rehearsal-admin")
        iam.put_user_policy(
            UserName="rehearsal-admin",
            PolicyName="everything",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}),
        )
        key = iam.create_access_key(UserName="rehearsal-admin")["AccessKey"]
        return {"AccessKeyId": key["AccessKeyId"], "SecretAccessKey": key["SecretAccessKey"]}

    def assume(self, role_arn, session):
        c = self.c("sts").assume_role(RoleArn=role_arn, RoleSessionName=session, DurationSeconds=43200)["Credentials"]
        return {"AccessKeyId": c["AccessKeyId"], "SecretAccessKey": c["SecretAccessKey"], "SessionToken": c["SessionToken"]}

    def enforce(self):
        req = urllib.request.Request(
            self.endpoint + "/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            json.load(resp)
        # A key moto does not know must now be refused: enforcement is on.
        s = boto3.session.Session(aws_access_key_id="AKIAREHEARSALNOBODY0", aws_secret_access_key="x", region_name=REGION)
        try:
            s.client("sqs", endpoint_url=self.endpoint, config=self.cfg).list_queues()
        except Exception as e:
            if "InvalidClientTokenId" in str(e) or "403" in str(e):
                return
            raise
        raise RuntimeError("moto did not turn IAM enforcement on (/moto-api/reset-auth)")


def without(state_path, spec):
    function, _, sid = spec.partition(":")
    with open(state_path) as f:
        state = json.load(f)
    fn = state["functions"].get(function)
    if fn is None or not sid:
        print(f"standup: --without {spec}: no such function in {state_path}", file=sys.stderr)
        return 1
    a = state["admin"]
    iam = boto3.session.Session(aws_access_key_id=a["AccessKeyId"], aws_secret_access_key=a["SecretAccessKey"], region_name=REGION).client(
        "iam", endpoint_url=state["endpoint"]
    )
    removed = []
    for name, doc in fn["policies"].items():
        kept = [st for st in doc["Statement"] if st.get("Sid") != sid]
        if len(kept) == len(doc["Statement"]):
            continue
        removed += [st for st in doc["Statement"] if st.get("Sid") == sid]
        iam.put_role_policy(RoleName=fn["role_name"], PolicyName=name, PolicyDocument=json.dumps({**doc, "Statement": kept}))
    if not removed:
        print(f"standup: --without {spec}: the role has no statement {sid}", file=sys.stderr)
        return 1
    print(json.dumps(removed, sort_keys=True))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint")
    ap.add_argument("--translated")
    ap.add_argument("--state", help="with --without: the output of a stand-up")
    ap.add_argument("--without", metavar="FUNCTION:SID")
    ap.add_argument("--samconfig", default="samconfig.toml")
    ap.add_argument("--config-env", default="default")
    ap.add_argument("--parameter", action="append", default=[], metavar="KEY=VALUE", help="a template parameter, over samconfig's")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.without:
        if not args.state:
            ap.error("--without needs --state")
        return without(args.state, args.without)
    if not args.endpoint or not args.translated:
        ap.error("--endpoint and --translated are required")

    started = time.monotonic()
    with open(args.translated) as f:
        template = json.load(f)
    try:
        params, stack = parameters(template, args.samconfig, args.config_env, args.parameter)
        r = Resolver(template, params, stack)
        s = Standup(args.endpoint.rstrip("/"), template, r)
        s.run()
    except Unresolvable as e:
        print(f"standup: {e}", file=sys.stderr)
        return 1

    functions = {}
    for logical, res in r.created.items():
        if res["type"] != "AWS::Lambda::Function":
            continue
        role = next(lid for lid, x in r.created.items() if x["type"] == "AWS::IAM::Role" and x["attrs"]["Arn"] == res["attrs"]["Role"])
        functions[logical] = {
            "name": res["ref"],
            "arn": res["attrs"]["Arn"],
            "role": role,
            "role_name": r.created[role]["ref"],
            "role_arn": res["attrs"]["Role"],
            "policies": r.created[role]["attrs"]["Policies"],
            "environment": res["attrs"]["Environment"],
            "credentials": s.assume(res["attrs"]["Role"], logical),
        }
    admin = s.admin()
    setup_calls = s.calls
    s.enforce()
    doc = {
        "endpoint": s.endpoint,
        "region": REGION,
        "account": ACCOUNT,
        "stack_name": stack,
        "admin": admin,
        "resources": {lid: {"type": x["type"], "ref": x["ref"], "attrs": {k: v for k, v in x["attrs"].items() if k != "Policies"}} for lid, x in r.created.items()},
        "functions": functions,
        "omitted": s.omitted,
        "setup_calls": setup_calls,
        "setup_seconds": round(time.monotonic() - started, 2),
    }
    text = json.dumps(doc, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    print(f"standup: {len(r.created)} resources, {len(functions)} functions, {setup_calls} setup calls, {doc['setup_seconds']} s; enforcement on", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
