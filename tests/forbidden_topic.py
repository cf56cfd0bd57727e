"""A fake for the one refusal the Pub/Sub emulator cannot make: a caller without permission.

The emulator enforces no IAM, so `ForbiddenPublisher` stands in for real
Pub/Sub refusing a publisher that lacks `pubsub.topics.publish` on one topic:
its channel answers each Publish to the topic named in the file
`$FORBIDDEN_TOPIC_FILE` (read at each call, so a test revokes the permission
mid-run by writing it) with the gRPC status the service gives,
PERMISSION_DENIED, before it reaches the emulator; every other call goes to
the emulator.
`python -m tests.forbidden_topic ARGS` runs the streaming job with it.
"""

import os
import sys
from pathlib import Path
from typing import Any

import grpc
from google.cloud import pubsub_v1
from google.pubsub_v1.services.publisher.transports.grpc import PublisherGrpcTransport

FORBIDDEN_ENV = "FORBIDDEN_TOPIC_FILE"


def forbidden_topic() -> str | None:
    """The topic publishing is forbidden to now, if any."""
    path = Path(os.environ.get(FORBIDDEN_ENV, "/nonexistent"))
    return path.read_text().strip() if path.is_file() else None


class _Denied(grpc.RpcError, grpc.Call, grpc.Future):
    """The failed call the service answers a caller without the permission with."""

    def __init__(self, topic: str) -> None:
        self._topic = topic

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.PERMISSION_DENIED

    def details(self) -> str:
        return f"User not authorized to perform this action. (fake: {self._topic})"

    def trailing_metadata(self) -> tuple:
        return ()

    def initial_metadata(self) -> tuple:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return None

    def add_callback(self, callback: Any) -> bool:
        return False

    def result(self, timeout: float | None = None) -> Any:
        raise self

    def exception(self, timeout: float | None = None) -> Exception:
        return self

    def traceback(self, timeout: float | None = None) -> Any:
        return None

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def add_done_callback(self, fn: Any) -> None:
        fn(self)


class _RefusePublish(grpc.UnaryUnaryClientInterceptor):
    """On the channel: a Publish to the forbidden topic is answered PERMISSION_DENIED."""

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        forbidden = forbidden_topic()
        if details.method.endswith("/Publish") and request.topic == forbidden:
            return _Denied(forbidden)
        return continuation(details, request)


class ForbiddenPublisher(pubsub_v1.PublisherClient):
    """A publisher client on the emulator whose channel refuses every Publish to
    `forbidden_topic()` as the service refuses a caller without permission (a fake, see above);
    the library maps the status to `PermissionDenied` as it would the service's."""

    def __init__(self, **kwargs: Any) -> None:
        channel = grpc.intercept_channel(
            grpc.insecure_channel(os.environ["PUBSUB_EMULATOR_HOST"]), _RefusePublish()
        )
        super().__init__(transport=PublisherGrpcTransport(channel=channel), **kwargs)


def install() -> None:
    """Every publisher the job makes from now on is a `ForbiddenPublisher`."""
    pubsub_v1.PublisherClient = ForbiddenPublisher  # type: ignore[misc]


if __name__ == "__main__":
    install()
    from pipelines.streaming import main

    sys.exit(main(sys.argv[1:]))
