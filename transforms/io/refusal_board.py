"""The topic-wide refusals of a job's publishing workers, for the process that started it.

A topic that refuses every message (`transforms.io.publish`: not found, no
permission, out of reach) is a configuration error the streaming launcher
stops the job on (`pipelines.streaming.watch`); it needs to hear of it from
the workers while the job runs.

How the launcher learns of it: each publishing worker writes what its
topics refused as a whole, and when it last published, to its own file on a
local `RefusalBoard` (a temp directory of the run), as `transforms.progress`
does for progress. Rejected: Beam metrics, which the local streaming runner
commits for the first bundle of a step only; the metric
`topic_refused_all|TOPIC|CAUSE` is still counted, for Dataflow's monitoring.
"""

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

UNUSABLE_PREFIX = "topic_refused_all"


def unusable_counter(topic: str, cause: str) -> str:
    """The counter of messages `topic` refused as a whole for `cause`; the streaming launcher
    reads it (`unusable_topic`) to stop the job."""
    return f"{UNUSABLE_PREFIX}|{topic}|{cause}"


def unusable_topic(counter: str) -> tuple[str, str] | None:
    """The topic and cause an `unusable_counter` name stands for; None for another counter."""
    prefix, _, rest = counter.partition("|")
    topic, _, cause = rest.rpartition("|")
    return (topic, cause) if prefix == UNUSABLE_PREFIX and topic else None


@dataclass(frozen=True)
class BoardReading:
    """What the publishing workers wrote on a `RefusalBoard`."""

    refused: dict[tuple[str, str], int]
    """(topic, cause) -> messages the topic refused as a whole."""
    last_publish: float
    """Wall time of the last publish by any worker (0 before the first)."""


class RefusalBoard:
    """A local folder where each publishing worker keeps its topic-wide refusals and the
    time of its last publish, one small file each, for the process that started the job."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._path = Path(directory) / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        self._refused: dict[str, int] = {}

    def note(self, refused: list[str]) -> None:
        """One publish call, with the counter name (`unusable_counter`) of each message its
        topic refused as a whole; written at once."""
        for counter in refused:
            self._refused[counter] = self._refused.get(counter, 0) + 1
        if not self._path.parent.is_dir():  # the job is over
            return
        part = self._path.with_suffix(".part")
        part.write_text(json.dumps({"refused": self._refused, "at": time.time()}), "utf-8")
        os.replace(part, self._path)  # the reader never sees half a file

    @staticmethod
    def read(directory: str) -> BoardReading:
        """Everything the workers wrote on the board at `directory`."""
        refused: dict[tuple[str, str], int] = {}
        last = 0.0
        for path in Path(directory).glob("*.json"):
            written = json.loads(path.read_text("utf-8"))
            last = max(last, written["at"])
            for counter, n in written["refused"].items():
                named = unusable_topic(counter)
                if named is not None and n:
                    refused[named] = refused.get(named, 0) + n
        return BoardReading(refused, last)
