#!/usr/bin/env python3
"""Run the AWS SAM transform on template.yaml offline and check what it makes.

No AWS account, credentials or network: the transform is the one CloudFormation
runs (aws-sam-translator), with the two things it would fetch from AWS stubbed:

- the managed-policy map (SAM asks IAM for it to expand policy names): a fixed
  map; this template names no managed policy (every role is explicit);
- the Region (SAM derives the partition from it): AWS_DEFAULT_REGION.

CodeUri "." is a local path that `sam build`/`sam package` replace with an S3
URI before CloudFormation sees the template; the translator only accepts S3
URIs, so it is replaced the same way here. Parameters without a default get
placeholder values (see PARAMETERS).

It also reads samconfig.toml: every environment's parameter_overrides must
name parameters of the template and satisfy their AllowedValues/AllowedPattern,
and the transform is checked once more with each environment's values. So is
each --parameters set (Key=Value ...; deploy/validate.sh passes one with the
worker in a private network, its Lambda tools and its secrets).

Usage: deploy/translate.py [template.yaml] [--samconfig samconfig.toml] [--parameters Key=Value ...] [--out transformed.json]
Exits non-zero, naming every failed check, if the output lacks what the
deployment relies on.
"""

import argparse
import copy
import json
import logging
import os
import re
import shlex
import sys
import tomllib

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# The transform records timing metrics for its DummyMetricsPublisher, which
# sends nothing, and warns at exit that they were never published.
logging.getLogger("samtranslator.metrics.metrics").setLevel(logging.ERROR)

from samtranslator.translator.transform import transform  # noqa: E402
from samtranslator.yaml_helper import yaml_parse  # noqa: E402

# Values for parameters that have no default. Anything syntactically valid will
# do: the transform copies them into the output, it does not resolve them.
PARAMETERS = {
    "JwtIssuer": "https://issuer.example.com/",
    "JwtAudience": "warrant-api",
}

# The fourteen HTTP routes and the function each must reach.
ROUTES = {
    "POST /v1/runs": "InvokeFunction",
    "POST /v1/runs/{run_id}/approvals/{approval_id}": "ApproveFunction",
    "POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile": "ApproveFunction",
    "POST /v1/runs/{run_id}/resume": "ResumeFunction",
    "GET /v1/runs/{run_id}": "RunsFunction",
    "GET /v1/runs/{run_id}/events": "RunsFunction",
    "GET /v1/approvals": "RunsFunction",
    "GET /v1/budget": "RunsFunction",
    "GET /v1/runs/{run_id}/evidence": "RunsFunction",
    "GET /v1/runs/{run_id}/receipts": "RunsFunction",
    "GET /v1/evidence/log": "RunsFunction",
    "GET /v1/keys": "RunsFunction",
    "GET /v1/matters": "RunsFunction",
    "PUT /v1/matters/{matter_id}": "ApproveFunction",
    "GET /v1/matters/{matter_id}": "RunsFunction",
    "GET /v1/matters/{matter_id}/versions": "RunsFunction",
    "GET /v1/matters/{matter_id}/hold": "RunsFunction",
    "PUT /v1/matters/{matter_id}/hold": "ApproveFunction",
    "DELETE /v1/matters/{matter_id}/hold": "ApproveFunction",
    "POST /v1/matters/{matter_id}/destroy": "ApproveFunction",
    "GET /v1/settings": "RunsFunction",
    "PUT /v1/settings": "ApproveFunction",
    "GET /v1/tools": "ApproveFunction",
    "GET /desk": "RunsFunction",
    "GET /desk/{proxy+}": "RunsFunction",
}
# The counsel's desk's page and assets: no authorizer (they hold no data and
# no authority; the page's API calls carry counsel's token).
PUBLIC_ROUTES = {"GET /desk", "GET /desk/{proxy+}"}
FUNCTIONS = ["InvokeFunction", "ApproveFunction", "ResumeFunction", "RunsFunction", "StreamReduceFunction",
             "WorkerFunction", "SweeperFunction"]
LEDGER_FILTER = {"eventName": ["INSERT"], "dynamodb": {"Keys": {"SK": {"S": [{"prefix": "EVT#"}]}}}}
# Issue 21: what the notification rule sends counsel, and who may publish to
# the bus (pkg/notify: source io.warrant).
NOTIFY_PATTERN = {"source": ["io.warrant"], "detail-type": ["warrant.pending", "warrant.expiring", "effect.outcome_unknown"]}
NOTIFY_PUBLISHERS = {"StreamReduceRole", "SweeperRole"}


class StaticManagedPolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader, which lists policies through IAM."""

    def load(self):
        return {
            "AWSLambdaBasicExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            "AWSLambdaDynamoDBExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole",
        }


def parameter_values(template):
    values = {}
    for name, spec in (template.get("Parameters") or {}).items():
        if "Default" in spec:
            values[name] = spec["Default"]
    values.update(PARAMETERS)
    missing = [n for n in (template.get("Parameters") or {}) if n not in values]
    if missing:
        raise SystemExit(f"translate: no value for parameters {missing}; add them to PARAMETERS")
    return values


def key_values(label, items):
    """Returns {param: value} from Key=Value strings and a list of problems."""
    pairs, problems = {}, []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            problems.append(f"{label}: parameter override {item!r} is not Key=Value")
            continue
        pairs[key] = value
    return pairs, problems


def check_values(label, pairs, template):
    """Returns the problems of parameter values: unknown names, values outside AllowedValues/AllowedPattern."""
    problems = []
    params = template.get("Parameters") or {}
    for key, value in pairs.items():
        spec = params.get(key)
        if spec is None:
            problems.append(f"{label}: {key} is not a parameter of the template")
            continue
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            problems.append(f"{label}: {key}={value!r} is not one of {allowed}")
        pattern = spec.get("AllowedPattern")
        # CloudFormation matches a CommaDelimitedList's pattern against each element.
        elements = value.split(",") if spec.get("Type") == "CommaDelimitedList" else [value]
        for element in elements:
            if pattern is not None and not re.fullmatch(pattern, element):
                problems.append(f"{label}: {key}={value!r}: {element!r} does not match {pattern}")
    return problems


def samconfig_overrides(path, template):
    """Returns {env: {param: value}} from samconfig.toml and a list of problems."""
    problems, envs = [], {}
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    for env, sections in cfg.items():
        if not isinstance(sections, dict):
            continue
        po = (((sections.get("deploy") or {}).get("parameters")) or {}).get("parameter_overrides")
        if po is None:
            continue
        pairs, pair_problems = key_values(f"samconfig [{env}]", shlex.split(po) if isinstance(po, str) else po)
        problems += pair_problems + check_values(f"samconfig [{env}]", pairs, template)
        envs[env] = pairs
    return envs, problems


def local_code_to_s3(template):
    for rsc in (template.get("Resources") or {}).values():
        if rsc.get("Type") == "AWS::Serverless::Function":
            props = rsc.setdefault("Properties", {})
            if isinstance(props.get("CodeUri"), str) and not props["CodeUri"].startswith("s3://"):
                props["CodeUri"] = "s3://offline-validation/warrant.zip"


def of_type(resources, typ):
    return {k: v for k, v in resources.items() if v.get("Type") == typ}


def is_ref(value, logical_id):
    return value == {"Ref": logical_id}


# The firm's key in use: the DataKey the stack created, or DataKeyArn.
DATA_KEY = {"Fn::If": ["CreateDataKey", {"Fn::GetAtt": ["DataKey", "Arn"]}, {"Ref": "DataKeyArn"}]}


def check(out):
    """Returns a list of failures (empty when everything holds) and a summary."""
    problems = []
    res = out.get("Resources", {})
    summary = {}

    def need(cond, msg):
        if not cond:
            problems.append(msg)

    # Functions: seven, each with what Globals should have merged in.
    fns = of_type(res, "AWS::Lambda::Function")
    summary["AWS::Lambda::Function"] = sorted(fns)
    need(sorted(fns) == sorted(FUNCTIONS), f"want Lambda functions {sorted(FUNCTIONS)}, got {sorted(fns)}")
    for name, fn in fns.items():
        p = fn.get("Properties", {})
        need(p.get("Runtime") == "provided.al2023", f"{name}: Runtime {p.get('Runtime')!r}")
        need(p.get("Architectures") == ["arm64"], f"{name}: Architectures {p.get('Architectures')!r}")
        need(p.get("Handler") == "bootstrap", f"{name}: Handler {p.get('Handler')!r}")
        lc = p.get("LoggingConfig", {})
        need(lc.get("LogFormat") == "JSON", f"{name}: LoggingConfig.LogFormat {lc.get('LogFormat')!r}")
        need(isinstance(lc.get("LogGroup"), dict) and "Ref" in lc["LogGroup"],
             f"{name}: LoggingConfig.LogGroup should reference its own log group, got {lc.get('LogGroup')!r}")
        role = p.get("Role")
        need(isinstance(role, dict) and "Fn::GetAtt" in role,
             f"{name}: Role should be the template's explicit role, got {role!r}")
        env = (p.get("Environment") or {}).get("Variables") or {}
        for var in ("TABLE_NAME", "LOG_LEVEL", "FIRM_CLAIM", "ROLES_CLAIM"):
            need(var in env, f"{name}: environment lacks {var} (Globals not merged?)")

    # Only the worker reaches the firm's systems, so only it may join a VPC,
    # and only when the stack names its subnets and security groups.
    worker_vpc = {"Fn::If": ["HasWorkerVpc",
                             {"SubnetIds": {"Ref": "WorkerSubnetIds"}, "SecurityGroupIds": {"Ref": "WorkerSecurityGroupIds"}},
                             {"Ref": "AWS::NoValue"}]}
    for name, fn in fns.items():
        vpc = fn.get("Properties", {}).get("VpcConfig")
        if name == "WorkerFunction":
            need(vpc == worker_vpc, f"{name}: VpcConfig {vpc!r}, want {worker_vpc!r}")
        else:
            need(vpc is None, f"{name}: VpcConfig {vpc!r}; only the worker joins the firm's VPC")

    # No SAM-generated role: those carry AWS managed policies with Resource "*".
    for name, role in of_type(res, "AWS::IAM::Role").items():
        need(not role.get("Properties", {}).get("ManagedPolicyArns"),
             f"{name}: has ManagedPolicyArns {role['Properties'].get('ManagedPolicyArns')} (SAM-generated role?)")

    # Two event source mappings: the table's stream into stream-reduce, the
    # worker queue into the worker.
    esms = of_type(res, "AWS::Lambda::EventSourceMapping")
    summary["AWS::Lambda::EventSourceMapping"] = sorted(esms)
    by_fn = {}
    for name, esm in esms.items():
        fn = (esm.get("Properties", {}).get("FunctionName") or {}).get("Ref")
        by_fn.setdefault(fn, []).append(name)
    need(sorted(by_fn) == ["StreamReduceFunction", "WorkerFunction"] and all(len(v) == 1 for v in by_fn.values()),
         f"want one event source mapping into StreamReduceFunction and one into WorkerFunction, got {by_fn}")
    for name in by_fn.get("WorkerFunction", []):
        p = esms[name].get("Properties", {})
        need(p.get("EventSourceArn") == {"Fn::GetAtt": ["WorkerQueue", "Arn"]}, f"{name}: EventSourceArn {p.get('EventSourceArn')!r}")
        need(p.get("BatchSize") == 1, f"{name}: BatchSize {p.get('BatchSize')!r}, want 1 (one run per invocation)")
        need("ReportBatchItemFailures" in (p.get("FunctionResponseTypes") or []),
             f"{name}: FunctionResponseTypes {p.get('FunctionResponseTypes')!r}")
        need(p.get("Enabled", True) is True, f"{name}: Enabled {p.get('Enabled')!r}")
    for name in by_fn.get("StreamReduceFunction", []):
        esm = esms[name]
        p = esm.get("Properties", {})
        need(p.get("EventSourceArn") == {"Fn::GetAtt": ["Table", "StreamArn"]}, f"{name}: EventSourceArn {p.get('EventSourceArn')!r}")
        need(p.get("StartingPosition") == "LATEST", f"{name}: StartingPosition {p.get('StartingPosition')!r}")
        filters = (p.get("FilterCriteria") or {}).get("Filters") or []
        patterns = []
        for f in filters:
            try:
                patterns.append(json.loads(f.get("Pattern", "")))
            except ValueError as e:
                problems.append(f"{name}: filter pattern is not JSON: {e}")
        need(patterns == [LEDGER_FILTER], f"{name}: FilterCriteria {patterns!r}, want [{LEDGER_FILTER!r}]")
        need("ReportBatchItemFailures" in (p.get("FunctionResponseTypes") or []),
             f"{name}: FunctionResponseTypes {p.get('FunctionResponseTypes')!r}")
        need(p.get("BisectBatchOnFunctionError") is True, f"{name}: BisectBatchOnFunctionError {p.get('BisectBatchOnFunctionError')!r}")
        retries = p.get("MaximumRetryAttempts")
        need(isinstance(retries, int) and 0 <= retries <= 10, f"{name}: MaximumRetryAttempts {retries!r} not bounded")
        age = p.get("MaximumRecordAgeInSeconds")
        need(isinstance(age, int) and 60 <= age <= 86400, f"{name}: MaximumRecordAgeInSeconds {age!r}")
        dest = ((p.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        need(dest == {"Fn::GetAtt": ["StreamDeadLetterQueue", "Arn"]}, f"{name}: DestinationConfig.OnFailure.Destination {dest!r}")

    # The sweeper's schedule (EventBridge Scheduler) and the role SAM makes for
    # it: it may invoke the sweeper and nothing else.
    schedules = of_type(res, "AWS::Scheduler::Schedule")
    summary["AWS::Scheduler::Schedule"] = sorted(schedules)
    need(len(schedules) == 1, f"want one schedule, got {sorted(schedules)}")
    for name, sch in schedules.items():
        p = sch.get("Properties", {})
        target = p.get("Target") or {}
        need(target.get("Arn") == {"Fn::GetAtt": ["SweeperFunction", "Arn"]}, f"{name}: Target.Arn {target.get('Arn')!r}")
        need(p.get("ScheduleExpression") == "rate(1 minute)", f"{name}: ScheduleExpression {p.get('ScheduleExpression')!r}")
        role_id = (target.get("RoleArn") or {}).get("Fn::GetAtt", [None])[0]
        role = res.get(role_id) or {}
        grants = []
        for pol in role.get("Properties", {}).get("Policies", []):
            for st in pol.get("PolicyDocument", {}).get("Statement", []):
                acts = st.get("Action")
                for a in acts if isinstance(acts, list) else [acts]:
                    grants.append((st.get("Effect"), a, json.dumps(st.get("Resource"), sort_keys=True)))
        want = [("Allow", "lambda:InvokeFunction", json.dumps({"Fn::GetAtt": ["SweeperFunction", "Arn"]}))]
        need(grants == want, f"{name}: its role {role_id} grants {grants}, want only lambda:InvokeFunction on the sweeper")

    # The HTTP API: JWT authorizer as the default, every route present.
    apis = of_type(res, "AWS::ApiGatewayV2::Api")
    summary["AWS::ApiGatewayV2::Api"] = sorted(apis)
    need(len(apis) == 1, f"want one HTTP API, got {sorted(apis)}")
    routes = {}
    for name, api in apis.items():
        body = api.get("Properties", {}).get("Body") or {}
        schemes = (body.get("components") or {}).get("securitySchemes") or {}
        jwt = {k: v.get("x-amazon-apigateway-authorizer", {}) for k, v in schemes.items()}
        jwt = {k: v for k, v in jwt.items() if v.get("type") == "jwt"}
        need(len(jwt) == 1, f"{name}: want one JWT authorizer, got {sorted(jwt)}")
        for auth_name, auth in jwt.items():
            need(auth.get("identitySource") == "$request.header.Authorization",
                 f"{name}: authorizer {auth_name} identitySource {auth.get('identitySource')!r}")
            cfg = auth.get("jwtConfiguration") or {}
            need(is_ref(cfg.get("issuer"), "JwtIssuer"), f"{name}: issuer {cfg.get('issuer')!r}")
            need(cfg.get("audience") == [{"Ref": "JwtAudience"}], f"{name}: audience {cfg.get('audience')!r}")
            summary["authorizer"] = f"{auth_name} (jwt, {auth.get('identitySource')})"
        need("x-amazon-apigateway-cors" not in body, f"{name}: CORS is configured")
        for path, ops in (body.get("paths") or {}).items():
            for method, op in ops.items():
                key = f"{method.upper()} {path}"
                uri = json.dumps(op.get("x-amazon-apigateway-integration", {}).get("uri"))
                routes[key] = next((f for f in FUNCTIONS if f in uri), None)
                behind_jwt = any(jwt_name in sec for sec in op.get("security", []) for jwt_name in jwt)
                if key in PUBLIC_ROUTES:
                    need(not behind_jwt, f"{name}: the desk's route {key} must be public")
                else:
                    need(behind_jwt, f"{name}: route {key} is not behind the JWT authorizer")
    summary["routes"] = sorted(routes)
    need(routes == ROUTES, f"routes {routes!r}, want {ROUTES!r}")

    stages = of_type(res, "AWS::ApiGatewayV2::Stage")
    for name, stage in stages.items():
        p = stage.get("Properties", {})
        need(is_ref(p.get("StageName"), "Stage"), f"{name}: StageName {p.get('StageName')!r}")
        als = p.get("AccessLogSettings") or {}
        try:
            fmt = json.loads(als.get("Format", ""))
        except ValueError as e:
            fmt = {}
            problems.append(f"{name}: access log format is not JSON: {e}")
        values = set(fmt.values())
        for var in ("$context.requestId", "$context.routeKey", "$context.status"):
            need(var in values, f"{name}: access log format lacks {var}")
        for v in values:
            need("body" not in v.lower() and "header" not in v.lower(), f"{name}: access log logs {v}")
    need(len(stages) == 1, f"want one API stage, got {sorted(stages)}")

    perms = of_type(res, "AWS::Lambda::Permission")
    need(len(perms) == len(ROUTES), f"want {len(ROUTES)} API invoke permissions, got {len(perms)}")

    for typ, want in (("AWS::DynamoDB::Table", 1), ("AWS::SQS::Queue", 4), ("AWS::CloudWatch::Alarm", 6),
                      ("AWS::SNS::Topic", 2), ("AWS::Logs::LogGroup", 8), ("AWS::Events::EventBus", 1), ("AWS::Events::Rule", 1)):
        got = sorted(of_type(res, typ))
        summary[typ] = got
        need(len(got) == want, f"want {want} {typ}, got {got}")
    table = res.get("Table", {})
    need(table.get("DeletionPolicy") == "Retain" and table.get("UpdateReplacePolicy") == "Retain",
         "Table must be retained on delete and replace")
    alarm = res.get("FailuresAlarm", {}).get("Properties", {})
    exprs = [m.get("Expression", "") for m in alarm.get("Metrics", [])]
    need(any('SCHEMA("Warrant", failure_kind, failure_stage)' in e and "SUM(Failures)" in e for e in exprs),
         f"FailuresAlarm does not sum Warrant/Failures over its dimensions: {exprs!r}")
    # Every queue: encrypted, behind a TLS-only policy; every dead-letter
    # queue watched by an alarm on its depth.
    queues = of_type(res, "AWS::SQS::Queue")
    tls_only = set()
    for name, pol in of_type(res, "AWS::SQS::QueuePolicy").items():
        p = pol.get("Properties", {})
        for st in p.get("PolicyDocument", {}).get("Statement", []):
            if (st.get("Effect") == "Deny" and st.get("Principal") == "*" and st.get("Action") in ("sqs:*", ["sqs:*"])
                    and (st.get("Condition") or {}).get("Bool", {}).get("aws:SecureTransport") in ("false", False)):
                for q in p.get("Queues", []):
                    if isinstance(q, dict) and "Ref" in q:
                        tls_only.add(q["Ref"])
    for name, q in queues.items():
        p = q.get("Properties", {})
        need(p.get("KmsMasterKeyId") == DATA_KEY and "SqsManagedSseEnabled" not in p,
             f"{name}: KmsMasterKeyId {p.get('KmsMasterKeyId')!r}, want the firm's key (issue 26)")
        need(name in tls_only, f"{name}: no queue policy denies it to requests without TLS")
    watched = set()
    for name, al in of_type(res, "AWS::CloudWatch::Alarm").items():
        p = al.get("Properties", {})
        if p.get("Namespace") == "AWS/SQS" and p.get("MetricName") == "ApproximateNumberOfMessagesVisible":
            for d in p.get("Dimensions", []):
                att = (d.get("Value") or {}).get("Fn::GetAtt") if isinstance(d.get("Value"), dict) else None
                if d.get("Name") == "QueueName" and att and att[1] == "QueueName":
                    watched.add(att[0])
    for dlq in ("StreamDeadLetterQueue", "WorkerDeadLetterQueue", "NotificationDeadLetterQueue"):
        need(dlq in watched, f"{dlq}: no alarm on its depth (ApproximateNumberOfMessagesVisible)")
    # A warrant about to expire unanswered pages someone: the sweeper's EMF
    # metric (pkg/handlers, WarrantsExpiringUnanswered), to the alarm topic.
    exp = of_type(res, "AWS::CloudWatch::Alarm").get("WarrantsExpiringAlarm", {}).get("Properties", {})
    need("WarrantsExpiringUnanswered" in str(exp.get("Metrics")) and exp.get("AlarmActions") == [{"Ref": "AlarmTopic"}],
         "WarrantsExpiringAlarm: not an alarm on WarrantsExpiringUnanswered to AlarmTopic")
    # Issue 25 C: a firm's log that no longer extends its last checkpoint
    # (the sweeper refuses to sign: failure_kind firm_log_diverged) pages someone.
    div = of_type(res, "AWS::CloudWatch::Alarm").get("FirmLogDivergedAlarm", {}).get("Properties", {})
    need({"Name": "failure_kind", "Value": "firm_log_diverged"} in (div.get("Dimensions") or [])
         and div.get("AlarmActions") == [{"Ref": "AlarmTopic"}],
         "FirmLogDivergedAlarm: not an alarm on Failures{failure_kind=firm_log_diverged} to AlarmTopic")
    wq = queues.get("WorkerQueue", {}).get("Properties", {})
    rp = wq.get("RedrivePolicy") or {}
    need(rp.get("deadLetterTargetArn") == {"Fn::GetAtt": ["WorkerDeadLetterQueue", "Arn"]},
         f"WorkerQueue: RedrivePolicy.deadLetterTargetArn {rp.get('deadLetterTargetArn')!r}")
    worker_timeout = fns.get("WorkerFunction", {}).get("Properties", {}).get("Timeout")
    need(isinstance(wq.get("VisibilityTimeout"), int) and isinstance(worker_timeout, int) and wq["VisibilityTimeout"] >= 6 * worker_timeout,
         f"WorkerQueue: VisibilityTimeout {wq.get('VisibilityTimeout')!r} is not at least 6 x the worker's Timeout {worker_timeout!r}")
    # One source per document: the rules survive the transform (CloudFormation
    # checks them before it changes anything).
    rules = sorted(out.get("Rules") or {})
    need(rules == ["OneAgentsSource", "OneToolCatalogSource", "OneToolPolicySource", "WorkerVpcComplete"],
         f"Rules {rules}, want the three one-source rules and WorkerVpcComplete")
    sub = res.get("AlarmEmailSubscription", {})
    need(sub.get("Condition") == "HasAlarmEmail", "the email subscription must depend on HasAlarmEmail")

    # Notifications (issue 21): the rule on the stack's bus sends counsel's
    # three events to the encrypted topic, with a retry policy and a
    # dead-letter queue only that rule may write; the topic takes publishes
    # from that rule only; the e-mail subscription exists only with an
    # address; and only stream-reduce and the sweeper may put events, on the
    # bus alone (SAM-generated roles, such as the schedule's, included).
    rules = of_type(res, "AWS::Events::Rule")
    rule = rules.get("NotifyCounselRule", {}).get("Properties", {})
    need(rule.get("EventBusName") == {"Ref": "NotificationBus"}, f"NotifyCounselRule: EventBusName {rule.get('EventBusName')!r}")
    need(rule.get("EventPattern") == NOTIFY_PATTERN, f"NotifyCounselRule: EventPattern {rule.get('EventPattern')!r}, want {NOTIFY_PATTERN!r}")
    need(rule.get("State", "ENABLED") == "ENABLED", f"NotifyCounselRule: State {rule.get('State')!r}")
    targets = rule.get("Targets") or []
    need(len(targets) == 1, f"NotifyCounselRule: want one target, got {len(targets)}")
    for tg in targets:
        need(tg.get("Arn") == {"Ref": "NotificationTopic"}, f"NotifyCounselRule: target {tg.get('Arn')!r}, want the notification topic")
        need((tg.get("DeadLetterConfig") or {}).get("Arn") == {"Fn::GetAtt": ["NotificationDeadLetterQueue", "Arn"]},
             f"NotifyCounselRule: DeadLetterConfig {tg.get('DeadLetterConfig')!r}")
        rp = tg.get("RetryPolicy") or {}
        need(isinstance(rp.get("MaximumEventAgeInSeconds"), int) and 60 <= rp["MaximumEventAgeInSeconds"] <= 3600
             and isinstance(rp.get("MaximumRetryAttempts"), int) and 0 <= rp["MaximumRetryAttempts"] <= 185,
             f"NotifyCounselRule: RetryPolicy {rp!r} (an expiring warrant's notice is stale within the hour)")
        need("RoleArn" not in tg, "NotifyCounselRule: a RoleArn on an SNS target (EventBridge uses the topic policy)")
    topic = res.get("NotificationTopic", {}).get("Properties", {})
    need(topic.get("KmsMasterKeyId") == DATA_KEY, f"NotificationTopic: KmsMasterKeyId {topic.get('KmsMasterKeyId')!r}, want the firm's key")
    rule_arn = {"Fn::GetAtt": ["NotifyCounselRule", "Arn"]}
    for pol_type, target in (("AWS::SNS::TopicPolicy", "NotificationTopic"), ("AWS::SQS::QueuePolicy", "NotificationDeadLetterQueue")):
        for name, pol in of_type(res, pol_type).items():
            p = pol.get("Properties", {})
            for st in p.get("PolicyDocument", {}).get("Statement", []):
                if st.get("Effect") == "Allow" and (st.get("Principal") or {}).get("Service") == "events.amazonaws.com":
                    cond = (st.get("Condition") or {}).get("ArnEquals", {}).get("aws:SourceArn")
                    need(cond == rule_arn, f"{name}: lets EventBridge in without aws:SourceArn = NotifyCounselRule ({st.get('Condition')!r})")
    nsub = res.get("NotificationEmailSubscription", {})
    need(nsub.get("Condition") == "HasNotificationEmail" and nsub.get("Properties", {}).get("TopicArn") == {"Ref": "NotificationTopic"},
         "NotificationEmailSubscription must subscribe the notification topic under HasNotificationEmail")
    for name, role in of_type(res, "AWS::IAM::Role").items():
        for pol in role.get("Properties", {}).get("Policies", []):
            for st in pol.get("PolicyDocument", {}).get("Statement", []):
                if isinstance(st, dict) and "Fn::If" in st:
                    st = st["Fn::If"][1]
                acts = st.get("Action")
                for a in acts if isinstance(acts, list) else [acts]:
                    if isinstance(a, str) and a.lower().startswith("events:"):
                        need(name in NOTIFY_PUBLISHERS and a == "events:PutEvents"
                             and st.get("Resource") == {"Fn::GetAtt": ["NotificationBus", "Arn"]},
                             f"{name}: grants {a} on {st.get('Resource')!r}; only {sorted(NOTIFY_PUBLISHERS)} may events:PutEvents, on NotificationBus")

    # Evidence: the receipt key (created unless the stack names one) signs
    # ECDSA P-256 and outlives the stack; the checkpoint bucket is write-once
    # (Object Lock, versioned, retention from the parameters), private,
    # encrypted, TLS only and retained.
    key = res.get("ReceiptKey", {})
    kp = key.get("Properties", {})
    need(key.get("Type") == "AWS::KMS::Key" and key.get("Condition") == "CreateReceiptKey",
         f"ReceiptKey: want an AWS::KMS::Key under CreateReceiptKey, got {key.get('Type')!r} under {key.get('Condition')!r}")
    need(kp.get("KeySpec") == "ECC_NIST_P256" and kp.get("KeyUsage") == "SIGN_VERIFY",
         f"ReceiptKey: KeySpec {kp.get('KeySpec')!r}, KeyUsage {kp.get('KeyUsage')!r}; want ECC_NIST_P256, SIGN_VERIFY")
    need(key.get("DeletionPolicy") == "Retain" and key.get("UpdateReplacePolicy") == "Retain",
         "ReceiptKey must be retained on delete and replace (old receipts must stay verifiable)")
    buckets = of_type(res, "AWS::S3::Bucket")
    summary["AWS::S3::Bucket"] = sorted(buckets)
    need(sorted(buckets) == ["CheckpointBucket"], f"want one bucket, CheckpointBucket, got {sorted(buckets)}")
    bucket = buckets.get("CheckpointBucket", {})
    bp = bucket.get("Properties", {})
    need(bucket.get("DeletionPolicy") == "Retain" and bucket.get("UpdateReplacePolicy") == "Retain",
         "CheckpointBucket must be retained on delete and replace")
    olc = bp.get("ObjectLockConfiguration") or {}
    retention = ((olc.get("Rule") or {}).get("DefaultRetention")) or {}
    need(bp.get("ObjectLockEnabled") is True and olc.get("ObjectLockEnabled") == "Enabled",
         f"CheckpointBucket: Object Lock not enabled: {bp.get('ObjectLockEnabled')!r}, {olc!r}")
    need(retention == {"Mode": {"Ref": "CheckpointRetentionMode"}, "Days": {"Ref": "CheckpointRetentionDays"}},
         f"CheckpointBucket: DefaultRetention {retention!r}, want the CheckpointRetention* parameters")
    need((bp.get("VersioningConfiguration") or {}).get("Status") == "Enabled", "CheckpointBucket: versioning not enabled")
    pab = bp.get("PublicAccessBlockConfiguration") or {}
    need(all(pab.get(k) is True for k in ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")),
         f"CheckpointBucket: PublicAccessBlockConfiguration {pab!r}")
    sse = (bp.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration") or [{}]
    need(sse == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": DATA_KEY}, "BucketKeyEnabled": True}],
         f"CheckpointBucket: encryption {sse!r}, want SSE-KMS with the firm's key and a bucket key")

    # The firm's key (issue 26, item 1): created unless the stack names one,
    # symmetric, rotated, retained; the table and every log group under it;
    # stream-reduce and the sweeper may use it only through a service.
    dkey = res.get("DataKey", {})
    dp = dkey.get("Properties", {})
    need(dkey.get("Type") == "AWS::KMS::Key" and dkey.get("Condition") == "CreateDataKey"
         and dp.get("KeyUsage") == "ENCRYPT_DECRYPT" and dp.get("EnableKeyRotation") is True
         and dkey.get("DeletionPolicy") == "Retain" and dkey.get("UpdateReplacePolicy") == "Retain",
         f"DataKey: {dkey.get('Type')!r} under {dkey.get('Condition')!r}, KeyUsage {dp.get('KeyUsage')!r}, "
         f"rotation {dp.get('EnableKeyRotation')!r}, {dkey.get('DeletionPolicy')!r}/{dkey.get('UpdateReplacePolicy')!r}")
    sse_table = (res.get("Table", {}).get("Properties", {}).get("SSESpecification")) or {}
    need(sse_table == {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": DATA_KEY}, f"Table: SSESpecification {sse_table!r}")
    for name, lg in of_type(res, "AWS::Logs::LogGroup").items():
        need(lg.get("Properties", {}).get("KmsKeyId") == DATA_KEY, f"{name}: KmsKeyId {lg.get('Properties', {}).get('KmsKeyId')!r}")
    for name in ("StreamReduceRole", "SweeperRole"):
        for pol in res.get(name, {}).get("Properties", {}).get("Policies", []):
            for st in pol.get("PolicyDocument", {}).get("Statement", []):
                if isinstance(st, dict) and "Fn::If" in st:
                    st = st["Fn::If"][1]
                acts = st.get("Action")
                acts = acts if isinstance(acts, list) else [acts]
                if st.get("Resource") == DATA_KEY and any(a in ("kms:Decrypt", "kms:GenerateDataKey") for a in acts):
                    via = ((st.get("Condition") or {}).get("StringEquals") or {}).get("kms:ViaService")
                    need(via is not None, f"{name}: {acts} on the firm's key outside a service (it never reads content)")
    need((bp.get("OwnershipControls") or {}).get("Rules") == [{"ObjectOwnership": "BucketOwnerEnforced"}],
         f"CheckpointBucket: OwnershipControls {bp.get('OwnershipControls')!r}")
    tls_buckets = set()
    for name, pol in of_type(res, "AWS::S3::BucketPolicy").items():
        p = pol.get("Properties", {})
        for st in p.get("PolicyDocument", {}).get("Statement", []):
            if (st.get("Effect") == "Deny" and st.get("Principal") == "*" and st.get("Action") in ("s3:*", ["s3:*"])
                    and (st.get("Condition") or {}).get("Bool", {}).get("aws:SecureTransport") in ("false", False)
                    and isinstance(p.get("Bucket"), dict) and "Ref" in p["Bucket"]):
                b = p["Bucket"]["Ref"]
                res = st.get("Resource") if isinstance(st.get("Resource"), list) else [st.get("Resource")]
                # The bucket and its objects.
                if {"Fn::GetAtt": [b, "Arn"]} in res and {"Fn::Sub": "${" + b + ".Arn}/*"} in res:
                    tls_buckets.add(b)
    for name in buckets:
        need(name in tls_buckets, f"{name}: no bucket policy denies it to requests without TLS")
    return problems, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("template", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "template.yaml"))
    ap.add_argument("--samconfig", default=os.path.join(os.path.dirname(__file__), "..", "samconfig.toml"))
    ap.add_argument("--parameters", nargs="+", default=[], metavar="Key=Value",
                    help="check the transform once more with these parameter values")
    ap.add_argument("--out", help="write the transformed template (JSON) here")
    args = ap.parse_args()

    with open(args.template, encoding="utf-8") as f:
        template = yaml_parse(f.read())

    def run(params):
        sam = copy.deepcopy(template)
        local_code_to_s3(sam)
        try:
            return transform(sam, params, StaticManagedPolicyLoader()), []
        except Exception as e:  # InvalidDocumentException carries the causes
            causes = getattr(e, "causes", None) or [e]
            return None, [f"SAM transform failed: {getattr(c, 'message', c)}" for c in causes]

    out, problems = run(parameter_values(template))
    if out is None:
        for p in problems:
            print(f"translate: {p}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2, sort_keys=True)

    problems, summary = check(out)
    envs = {}
    if os.path.exists(args.samconfig):
        envs, sc_problems = samconfig_overrides(args.samconfig, template)
        problems += sc_problems
    if args.parameters:
        pairs, pair_problems = key_values("--parameters", args.parameters)
        problems += pair_problems + check_values("--parameters", pairs, template)
        envs["--parameters"] = pairs
    for env, overrides in sorted(envs.items()):
        env_out, env_problems = run({**parameter_values(template), **overrides})
        if env_out is not None:
            env_problems, _ = check(env_out)
        problems += [f"[{env}] {p}" for p in env_problems]
    counts = {}
    for rsc in out.get("Resources", {}).values():
        counts[rsc["Type"]] = counts.get(rsc["Type"], 0) + 1
    print(f"translate: SAM transform OK: {len(out.get('Resources', {}))} CloudFormation resources")
    for typ in sorted(counts):
        print(f"  {counts[typ]:2d} {typ}")
    print(f"  routes: {', '.join(summary.get('routes', []))}")
    print(f"  authorizer: {summary.get('authorizer')}")
    if envs:
        print(f"  parameter sets checked: {', '.join(sorted(envs))}")
    if problems:
        for p in problems:
            print(f"translate: FAIL: {p}", file=sys.stderr)
        print(f"translate: {len(problems)} check(s) failed", file=sys.stderr)
        return 1
    print("translate: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
