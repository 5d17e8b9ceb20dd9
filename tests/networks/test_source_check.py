"""The pre-check of a custom network's text: a SyntaxError or a missing or unusable `build` is
answered in the caller's process without running the file or starting a checker; anything the
text cannot settle goes on to the real check."""

from __future__ import annotations

import textwrap

import pytest

from trainyard.networks import NetworkError, load_network_source
from trainyard.networks import cache as network_cache_module
from trainyard.networks.cache import NetworkCache
from trainyard.networks.source_check import BUILD_CONTRACT, precheck_source

GOOD = "from torch import nn\n\ndef build(num_classes, in_channels, image_size):\n    return nn.Linear(1, 1)\n"


@pytest.mark.parametrize("source", [
    "def build(num_classes, in_channels, image_size)\n    return 1\n",  # a missing colon
    "x = (1,\ndef build(a, b, c):\n    return a\n",  # an unclosed bracket
    "def build(a, b, c):\n  return a\n    return b\n",  # indentation
])
def test_a_syntax_error_reads_as_the_real_check_says_it(source):
    answer = precheck_source(source)
    with pytest.raises(NetworkError) as real:
        load_network_source(source)
    assert answer == {"ok": False, "error": real.value.message, "line": real.value.lineno}
    assert answer["error"].startswith(f"line {answer['line']}: SyntaxError: ")


def test_what_only_the_compiler_finds_is_refused_with_its_line():
    answer = precheck_source("from torch import nn\nreturn nn.Linear(1, 1)\n")
    assert answer == {"ok": False, "error": "line 2: SyntaxError: 'return' outside function", "line": 2}


def test_a_file_without_build_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n\ndef make(num_classes, in_channels, image_size):\n    pass\n"
    assert precheck_source(source) == {"ok": False, "error": BUILD_CONTRACT, "line": None}
    assert not marker.exists()  # the file was read, never run


@pytest.mark.parametrize(("signature", "expected"), [
    ("build(num_classes)", "it takes (num_classes)"),
    ("build(a, b, c, d)", "it takes (a, b, c, d)"),
    ("build(a, b, c, *, depth)", "keyword-only argument 'depth' needs a default"),
])
def test_a_build_that_cannot_take_the_call_is_refused_at_its_line(signature, expected):
    answer = precheck_source(f"import torch\n\ndef {signature}:\n    return torch.nn.Linear(1, 1)\n")
    assert answer["line"] == 3 and answer["error"].startswith("line 3: build() is called as build(")
    assert expected in answer["error"]


@pytest.mark.parametrize("source", [
    GOOD,
    "def build(*args):\n    pass\n",
    "def build(num_classes, in_channels, image_size, depth=3, *, width=4):\n    pass\n",
    "from mylib import build\n",
    "import mylib as build\n",
    "def make(a, b, c):\n    pass\n\nbuild = make\n",
    "try:\n    from fast import build\nexcept ImportError:\n    def build(a, b, c):\n        pass\n",
    "if True:\n    def build(a):\n        pass\nelse:\n    def build(a, b, c):\n        pass\n",
    "import functools\n\n@functools.lru_cache\ndef build(a):\n    pass\n",
    "class build:\n    def __init__(self, a, b, c):\n        pass\n",
    "from mylib import *\n",
    "globals()['build'] = lambda a, b, c: None\n",
])
def test_what_the_text_cannot_settle_goes_on_to_the_real_check(source):
    assert precheck_source(source) is None


def test_a_cached_check_answers_a_syntax_error_without_a_checker(tmp_path, monkeypatch):
    def no_checker(*args, **kwargs):
        raise AssertionError("a checker was started for a file that does not parse")

    monkeypatch.setattr(network_cache_module, "check_network_isolated", no_checker)
    source = textwrap.dedent("""\
        from torch import nn

        def build(num_classes, in_channels, image_size)
            return nn.Linear(1, num_classes)
    """)
    answer = NetworkCache(tmp_path).check(source=source, num_classes=3, in_channels=3, image_size=32)
    assert answer == {"ok": False, "error": "line 3: SyntaxError: expected ':'", "line": 3}
    answer = NetworkCache(tmp_path).check(source="x = 1\n", num_classes=3, in_channels=3, image_size=32)
    assert answer["error"] == BUILD_CONTRACT
