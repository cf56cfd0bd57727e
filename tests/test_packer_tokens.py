"""The tokenizer loads offline, from the bundled file or a local copy, and caches counts."""

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext

from packer.tokens import TokenCounter, TokenizerError, load_encoding

BUNDLED = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def test_cl100k_loads_offline_from_the_bundled_package():
    encoding = load_encoding("cl100k_base")
    assert encoding.encode_ordinary("hello world") == [15339, 1917]


def test_a_local_tiktoken_file_loads_and_agrees_with_the_bundled_one(tmp_path):
    copy = tmp_path / "cl100k_base.tiktoken"
    copy.write_bytes(BUNDLED.read_bytes())
    from_file = load_encoding("cl100k_base", str(copy))
    text = "Refunds within 30 days — naïve café ✓"
    assert from_file.encode_ordinary(text) == load_encoding("cl100k_base").encode_ordinary(text)


def test_a_tampered_file_is_refused(tmp_path):
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(BUNDLED.read_bytes()[:-100])
    with pytest.raises(TokenizerError, match="not the official cl100k_base"):
        load_encoding("cl100k_base", str(bad))


class _ReadOnlyEnviron(dict):
    def __setitem__(self, key, value):
        raise AssertionError(f"loading a tokenizer set {key} in the process environment")

    def __delitem__(self, key):
        raise AssertionError(f"loading a tokenizer removed {key} from the process environment")


def test_a_local_file_loads_without_process_state_or_network(tmp_path, monkeypatch):
    """Threads of a worker may load tokenizers at once: nothing process-wide may change."""
    copy = tmp_path / "cl100k_base.tiktoken"
    copy.write_bytes(BUNDLED.read_bytes())

    def no_download(path):
        raise AssertionError(f"tried to read {path}")

    with monkeypatch.context() as patched, ThreadPoolExecutor(4) as pool:
        patched.setattr(os, "environ", _ReadOnlyEnviron(os.environ))
        patched.setattr(tiktoken.load, "read_file", no_download)
        loaded = list(pool.map(lambda _: load_encoding("cl100k_base", str(copy)), range(4)))
    assert {tuple(e.encode_ordinary("hello world")) for e in loaded} == {(15339, 1917)}


@pytest.mark.parametrize("name", ["o200k_base", "o200k_harmony", "p50k_edit", "r50k_base"])
def test_another_encodings_file_is_refused_by_its_official_hash(tmp_path, name):
    """o200k_harmony builds on o200k_base: its file is checked against o200k_base's hash too."""
    wrong = tmp_path / "wrong.tiktoken"
    wrong.write_bytes(BUNDLED.read_bytes())
    with pytest.raises(TokenizerError, match=f"not the official {name} file"):
        load_encoding(name, str(wrong))


def test_errors_say_how_to_fix(tmp_path):
    with pytest.raises(TokenizerError, match="set tokenizer_file to a local copy of o200k_base"):
        load_encoding("o200k_base")
    with pytest.raises(TokenizerError, match="unknown tokenizer 'bpe-x'"):
        load_encoding("bpe-x", str(BUNDLED))
    with pytest.raises(TokenizerError, match="does not exist"):
        load_encoding("o200k_base", str(tmp_path / "missing.tiktoken"))


def test_counts_are_cached_per_text():
    counter = TokenCounter.load()
    assert counter.count("same text here") == counter.count("same text here") == 3
    assert (counter.misses, counter.hits) == (1, 1)


def test_a_rendered_text_is_counted_exactly_once_under_its_parts():
    counter, plain = TokenCounter.load(), TokenCounter.load()
    text = "A block body long enough to be hashed when counted as plain text. " * 3
    renders = []

    def render() -> str:
        renders.append(text)
        return text

    first = counter.count_rendered(("header", text), render)
    assert first == counter.count_rendered(("header", text), render) == plain.count(text)
    assert len(renders) == 1 and (counter.misses, counter.hits) == (1, 1)


def test_special_token_strings_count_as_plain_text():
    counter = TokenCounter.load()
    assert counter.count("<|endoftext|>") > 1
