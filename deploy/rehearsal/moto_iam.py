#!/usr/bin/env python3
"""moto's server, with each call authorized against the resource it names.

moto's IAM enforcement (INITIAL_NO_AUTH_ACTION_COUNT) checks a call's action
against the caller's policies, but the resource it checks is whatever the
service's response class returns from `_determine_resource`; only SQS, IAM and
STS have one (S3 passes bucket and key itself). Every other service is checked
against "*", which no statement scoped to a table, key, topic or bus matches,
so under enforcement a least-privilege role is denied everything (see
docs/DECISIONS.md, issue 28). This gives the response classes the functions
call a `_determine_resource` that returns the ARN the request names, as AWS
authorizes it, and nothing else: moto's own evaluator (IAMPolicy) still decides.

Three calls name more than one resource or action, and are checked once for
each: TransactWriteItems and TransactGetItems (AWS checks each item's own
action, dynamodb:PutItem, UpdateItem, DeleteItem, ConditionCheckItem, GetItem,
on its table; moto would check dynamodb:TransactWriteItems once), and PutEvents
(each entry on its bus).

Every authorization decision moto makes while enforcing is written to the
decision log as one JSON line: access key, principal, role (for assumed-role
keys), action, resource, and "allowed" or "denied". Request bodies are never
written. Requests moto lets through unchecked (the first
INITIAL_NO_AUTH_ACTION_COUNT) make no line.

One fidelity patch besides (patch_kms_digest): KMS Sign and Verify with
MessageType DIGEST. AWS signs the digest it is given as the digest ("KMS
skips the hashing step", API_Sign's MessageType); moto 5 reads MessageType
and drops it (moto/kms/responses.py, sign and verify; moto/kms/models.py's
verify says "The MessageType-parameter DIGEST is not yet implemented"), so
it hashes the digest again and a receipt signed so verifies with no public
key (pkg/evidence). With the patch an ECDSA key signs and verifies a DIGEST
message prehashed, as AWS does; RAW messages and RSA keys are as moto has
them.

And one for S3's signature check (patch_s3_query_signature): SigV4's
canonical query string percent-encodes every key and value (all but
A-Z a-z 0-9 - _ . ~, so "/" is %2F); moto checks an S3 request's signature
over its query as decoded (moto/core/authorization.py passes the request's
uri, "/" and all, to botocore, whose canonical query takes it as given), so
any S3 request whose query holds a "/" (a ListObjectsV2 prefix such as
"checkpoints/<firm>/") is refused SignatureDoesNotMatch, which AWS signs
and accepts. The patch encodes the query as SigV4 does before the check.

Enforcement starts off (INITIAL_NO_AUTH_ACTION_COUNT infinite, so setup runs
with any credentials); POST "0" to /moto-api/reset-auth turns it on for every
request after (deploy/rehearsal/standup.py does, once everything stands).

Usage: deploy/rehearsal/moto_iam.py --port PORT --decisions FILE [--host 127.0.0.1]
Prints "ready http://HOST:PORT" on stdout once it answers, and serves until
SIGTERM or SIGINT.
"""

import argparse
import base64
import json
import signal
import sys
import threading
from urllib.parse import unquote

from moto import settings
from moto.iam import access_control
from moto.iam.access_control import IAMRequest, IAMRequestBase


def _arn(resp, service, resource, region=True):
    where = resp.region if region else ""
    return f"arn:aws:{service}:{where}:{resp.current_account}:{resource}"


def _param(resp, name):
    try:
        return resp._get_param(name)
    except Exception:  # a body the service's own parser will refuse
        return None


# ---- the resource each request names, service by service ----


def _dynamodb_table(resp, table, index=None):
    if not table:
        return "*"
    if table.startswith("arn:"):
        base = table
    else:
        base = _arn(resp, "dynamodb", f"table/{table}")
    return f"{base}/index/{index}" if index else base


# The action AWS checks for each kind of transaction item.
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def dynamodb_checks(resp):
    action = resp._get_action()
    if action in ("TransactWriteItems", "TransactGetItems"):
        checks = []
        for item in _param(resp, "TransactItems") or []:
            for kind, body in item.items():
                checks.append((_TRANSACT_ACTIONS.get(kind, action), _dynamodb_table(resp, body.get("TableName"))))
        return checks
    if action in ("BatchGetItem", "BatchWriteItem"):
        tables = list((_param(resp, "RequestItems") or {}).keys())
        return [(action, _dynamodb_table(resp, t)) for t in tables] or [(action, "*")]
    return [(action, _dynamodb_table(resp, _param(resp, "TableName"), _param(resp, "IndexName")))]


def dynamodbstreams_checks(resp):
    action = resp._get_action()
    stream = _param(resp, "StreamArn")
    if not stream:
        iterator = _param(resp, "ShardIterator")
        # moto's iterators are "<stream arn>|1|<id>".
        stream = iterator.split("|", 1)[0] if iterator else None
    if not stream and _param(resp, "TableName"):
        stream = _dynamodb_table(resp, _param(resp, "TableName")) + "/stream/*"
    return [(action, stream or "*")]


def kms_checks(resp):
    from moto.kms.models import kms_backends
    from moto.kms.utils import _deserialize_ciphertext_blob

    action = resp._get_action()
    key = _param(resp, "KeyId") or _param(resp, "TargetKeyId")
    if not key and action == "Decrypt":
        # A symmetric ciphertext names its key; moto's blob begins with the key id.
        blob = _param(resp, "CiphertextBlob")
        try:
            key = _deserialize_ciphertext_blob(base64.b64decode(blob)).key_id
        except Exception:
            key = None
    if not key:
        return [(action, "*")]
    backend = kms_backends[resp.current_account][resp.region]
    try:
        key_id = backend.any_id_to_key_id(key)
    except Exception:  # an alias that names no key: the service answers NotFound
        return [(action, "*")]
    return [(action, _arn(resp, "kms", f"key/{key_id}"))]


def sns_checks(resp):
    return [(resp._get_action(), _param(resp, "TopicArn") or _param(resp, "ResourceArn") or "*")]


def _bus_arn(resp, bus):
    bus = bus or "default"
    return bus if bus.startswith("arn:") else _arn(resp, "events", f"event-bus/{bus}")


def events_checks(resp):
    action = resp._get_action()
    if action == "PutEvents":
        buses = sorted({_bus_arn(resp, e.get("EventBusName")) for e in _param(resp, "Entries") or []})
        return [(action, b) for b in buses] or [(action, "*")]
    if action in ("PutRule", "PutTargets", "DescribeRule", "DeleteRule", "RemoveTargets", "ListTargetsByRule"):
        rule = _param(resp, "Name") or _param(resp, "Rule")
        bus = _param(resp, "EventBusName")
        if rule:
            prefix = "" if not bus or bus == "default" else bus.split("event-bus/")[-1] + "/"
            return [(action, _arn(resp, "events", f"rule/{prefix}{rule}"))]
    if action in ("CreateEventBus", "DescribeEventBus", "DeleteEventBus"):
        return [(action, _bus_arn(resp, _param(resp, "Name")))]
    return [(action, "*")]


def secretsmanager_checks(resp):
    from moto.secretsmanager.models import secretsmanager_backends

    action = resp._get_action()
    secret = _param(resp, "SecretId")
    if not secret:
        return [(action, "*")]
    found = secretsmanager_backends[resp.current_account][resp.region].secrets.get(secret)
    return [(action, found.arn if found else secret if secret.startswith("arn:") else "*")]


def _parameter_arn(resp, name):
    if name.startswith("arn:"):
        return name
    return _arn(resp, "ssm", "parameter" + (name if name.startswith("/") else "/" + name))


def ssm_checks(resp):
    action = resp._get_action()
    if action == "GetParameters":
        return [(action, _parameter_arn(resp, n)) for n in _param(resp, "Names") or []] or [(action, "*")]
    name = _param(resp, "Name")
    return [(action, _parameter_arn(resp, name) if name else "*")]


def logs_checks(resp):
    action = resp._get_action()
    group = _param(resp, "logGroupName")
    if not group:
        return [(action, "*")]
    stream = _param(resp, "logStreamName")
    suffix = f":log-stream:{stream}" if stream else ""
    return [(action, _arn(resp, "logs", f"log-group:{group}{suffix}"))]


def lambda_checks(resp):
    action = resp._get_action()
    name = None
    if resp.uri_match:
        try:
            name = resp.uri_match.group("function_name")
        except IndexError:
            name = None
    if not name:
        return [(action, "*")]
    name = unquote(name)
    return [(action, name if name.startswith("arn:") else _arn(resp, "lambda", f"function:{name}"))]


# ---- the patch ----


def _request_for(action):
    """An IAMRequest that checks `action` in place of the request's own."""

    class ItemRequest(IAMRequest):
        def __init__(self, **kwargs):
            kwargs["action"] = action
            super().__init__(**kwargs)

    return ItemRequest


def _install(cls, checks):
    def determine(self):
        return checks(self)[0][1]

    def authorize(self, resource="*"):
        todo = checks(self)
        if len(todo) == 1 and todo[0][0] == self._get_action():
            return self._authenticate_and_authorize_action(IAMRequest, todo[0][1])
        for action, res in todo:
            self._authenticate_and_authorize_action(_request_for(action), res)

    cls._determine_resource = determine
    cls._authenticate_and_authorize_normal_action = authorize


def patch_resources():
    from moto.awslambda.responses import LambdaResponse
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.events.responses import EventsHandler
    from moto.kms.responses import KmsResponse
    from moto.logs.responses import LogsResponse
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.sns.responses import SNSResponse
    from moto.ssm.responses import SimpleSystemManagerResponse

    for cls, checks in [
        (DynamoHandler, dynamodb_checks),
        (DynamoDBStreamsHandler, dynamodbstreams_checks),
        (KmsResponse, kms_checks),
        (SNSResponse, sns_checks),
        (EventsHandler, events_checks),
        (SecretsManagerResponse, secretsmanager_checks),
        (SimpleSystemManagerResponse, ssm_checks),
        (LogsResponse, logs_checks),
        (LambdaResponse, lambda_checks),
    ]:
        _install(cls, checks)


def patch_s3_query_signature():
    """S3's signature checked over the SigV4 canonical query (see the
    module's doc): each key and value decoded once and percent-encoded as
    SigV4 encodes them. A value holding a literal "%" would be decoded
    twice; no call of the functions sends one."""
    from urllib.parse import quote, unquote

    from moto.iam.access_control import S3IAMRequest

    create = S3IAMRequest._create_aws_request

    def create_aws_request(self):
        request = create(self)
        path, sep, query = request.url.partition("?")
        if sep:
            pairs = []
            for pair in query.split("&"):
                k, _, v = pair.partition("=")
                pairs.append(quote(unquote(k), safe="-_.~") + "=" + quote(unquote(v), safe="-_.~"))
            request.url = path + "?" + "&".join(pairs)
        return request

    S3IAMRequest._create_aws_request = create_aws_request


_digest = threading.local()


def patch_kms_digest():
    """KMS Sign and Verify of a MessageType DIGEST message, as AWS: the
    message is the digest, signed without hashing it again (see the
    module's doc). ECDSA keys only (the receipt key is ECC_NIST_P256)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

    from moto.kms.exceptions import ValidationException
    from moto.kms.responses import KmsResponse
    from moto.kms.utils import ECDSAPrivateKey, validate_signing_algorithm

    hashes = {"ECDSA_SHA_256": ("SHA256", 32), "ECDSA_SHA_384": ("SHA384", 48), "ECDSA_SHA_512": ("SHA512", 64)}

    def flagged(method):
        def handle(self):
            _digest.on = _param(self, "MessageType") == "DIGEST"
            try:
                return method(self)
            finally:
                _digest.on = False

        return handle

    def prehashed(key, message, algorithm):
        validate_signing_algorithm(algorithm, key.valid_signing_algorithms)
        from cryptography.hazmat.primitives import hashes as h

        name, size = hashes[algorithm]
        if len(message) != size:
            # AWS: a DIGEST message must be as long as the algorithm's digest.
            raise ValidationException(f"Digest is invalid length for algorithm {algorithm}.")
        return ec.ECDSA(Prehashed(getattr(h, name)()))

    sign, verify = ECDSAPrivateKey.sign, ECDSAPrivateKey.verify

    def ecdsa_sign(self, message, signing_algorithm):
        if not getattr(_digest, "on", False):
            return sign(self, message, signing_algorithm)
        return self.private_key.sign(message, prehashed(self, message, signing_algorithm))

    def ecdsa_verify(self, message, signature, signing_algorithm):
        if not getattr(_digest, "on", False):
            return verify(self, message, signature, signing_algorithm)
        try:
            self.private_key.public_key().verify(signature, message, prehashed(self, message, signing_algorithm))
            return True
        except InvalidSignature:
            return False

    KmsResponse.sign = flagged(KmsResponse.sign)
    KmsResponse.verify = flagged(KmsResponse.verify)
    ECDSAPrivateKey.sign = ecdsa_sign
    ECDSAPrivateKey.verify = ecdsa_verify


def log_decisions(path):
    lock = threading.Lock()
    out = open(path, "a", buffering=1, encoding="utf-8")
    checked = IAMRequestBase.check_action_permitted

    def write(req, resource, decision):
        key = req._get_string_between("Credential=", ",", req._headers["Authorization"]).split("/")[0]
        who = req._access_key
        line = {
            "access_key": key,
            "principal": who.arn,
            "role": getattr(who, "_owner_role_name", None),
            "action": req._action,
            "resource": resource,
            "decision": decision,
        }
        with lock:
            out.write(json.dumps(line, sort_keys=True) + "\n")

    def check_action_permitted(self, resource):
        try:
            checked(self, resource)
        except Exception as e:
            # IAM's AccessDeniedError is a 403; S3's (S3AccessDeniedError,
            # BucketAccessDeniedError) say so in their names.
            denied = getattr(e, "code", None) == 403 or "AccessDenied" in type(e).__name__
            write(self, resource, "denied" if denied else "error " + type(e).__name__)
            raise
        write(self, resource, "allowed")

    IAMRequestBase.check_action_permitted = check_action_permitted
    access_control.IAMRequestBase.check_action_permitted = check_action_permitted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--decisions", required=True, help="file the authorization decisions are appended to (JSON lines)")
    args = ap.parse_args()

    settings.INITIAL_NO_AUTH_ACTION_COUNT = float("inf")
    patch_resources()
    patch_kms_digest()
    patch_s3_query_signature()
    log_decisions(args.decisions)

    from werkzeug.serving import make_server

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    server = make_server(args.host, args.port, DomainDispatcherApplication(create_backend_app), threaded=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"ready http://{args.host}:{args.port}", flush=True)
    stop.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
