"""Hugging Face tokenizer.json files: the ledger stays exact, or the file is refused.

The tokenizers are real, trained here with the `tokenizers` library on the
sample texts (nothing is downloaded): a byte-level BPE as GPT-2-style open
models use, a BERT-style WordPiece, and a SentencePiece-style Metaspace one
whose counts do not add up over the prompt's parts.
"""

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from packer import Catalog, PackerRuntime, TokenCounter, pack_request
from packer.pack import PackError
from packer.tokens import TokenizerError
from tests.factories import encoded_prompt_tokens
from tests.strategies import catalog_documents, examples, requests
from tests.test_packer_properties import configs

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def _corpus() -> list[str]:
    texts = []
    for line in (SAMPLES / "requests.jsonl").read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            texts.append(record.get("question", ""))
            texts += [c.get("text", "") for c in record.get("candidates", [])]
    return [*texts, '<evidence label="E1" title="x">\n</evidence>\nQuestion: Evidence labels']


def _save(tokenizer: Tokenizer, trainer: trainers.Trainer, path: Path) -> str:
    tokenizer.train_from_iterator(_corpus(), trainer)
    tokenizer.save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def byte_level_bpe(tmp_path_factory: pytest.TempPathFactory) -> str:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    return _save(tokenizer, trainer, tmp_path_factory.mktemp("bpe") / "tokenizer.json")


@pytest.fixture(scope="module")
def bert_wordpiece(tmp_path_factory: pytest.TempPathFactory) -> str:
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=500, special_tokens=["[UNK]"], show_progress=False
    )
    return _save(tokenizer, trainer, tmp_path_factory.mktemp("wp") / "tokenizer.json")


@pytest.fixture(scope="module")
def metaspace_unigram(tmp_path_factory: pytest.TempPathFactory) -> str:
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=300, show_progress=False)
    return _save(tokenizer, trainer, tmp_path_factory.mktemp("sp") / "tokenizer.json")


def test_counts_come_from_the_file(byte_level_bpe: str) -> None:
    counter = TokenCounter.load("hf", byte_level_bpe)
    reference = Tokenizer.from_file(byte_level_bpe)
    text = "Refund requests are accepted within 30 days of purchase."
    assert counter.count(text) == len(reference.encode(text, add_special_tokens=False).ids)
    assert counter.name.startswith("hf:tokenizer.json@") and len(counter.name) == 30
    assert TokenCounter.load(file=byte_level_bpe).name == counter.name  # `.json` means hf


def _assert_exact(counter: TokenCounter, docs, request, config) -> None:
    try:
        result = pack_request(request, Catalog(docs), config, PackerRuntime(counter))
    except PackError:  # a tiny vocabulary spends many tokens on the contract
        assume(False)
        return
    exact = encoded_prompt_tokens(counter.encoding, result.prompt.messages)
    ledger = result.manifest.budget
    assert exact == result.prompt.prompt_tokens == ledger.prompt_tokens
    assert exact + ledger.reserved_answer <= ledger.input_limit
    assert result.manifest.tokenizer == counter.name


@pytest.mark.parametrize("fixture", ["byte_level_bpe", "bert_wordpiece"])
def test_the_ledger_is_exact_with_an_additive_tokenizer(fixture: str, request) -> None:
    counter = TokenCounter.load("hf", request.getfixturevalue(fixture))

    @settings(max_examples=examples(150))
    @given(docs=catalog_documents(), req=requests(), config=configs)
    def exact(docs, req, config) -> None:
        _assert_exact(counter, docs, req, config)

    exact()


def test_a_tokenizer_whose_counts_do_not_add_up_is_refused(metaspace_unigram: str) -> None:
    with pytest.raises(TokenizerError, match="Metaspace"):
        TokenCounter.load("hf", metaspace_unigram)


def test_bad_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="needs tokenizer_file"):
        TokenCounter.load("hf")
    with pytest.raises(TokenizerError, match="does not exist"):
        TokenCounter.load("hf", str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(TokenizerError, match=r"not a tokenizer\.json"):
        TokenCounter.load("hf", str(tmp_path / "bad.json"))
