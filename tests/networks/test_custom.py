"""Custom network files: loading, line numbers in errors, shape checks, the isolated check."""

import textwrap

import pytest
from torch import nn

from trainyard.networks import NetworkError, check_network, check_network_isolated, load_network_source
from trainyard.networks.check import run_check

GOOD = textwrap.dedent('''\
    import torch
    from torch import nn

    def build(num_classes, in_channels, image_size):
        return nn.Sequential(
            nn.Conv2d(in_channels, 4, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4, num_classes),
        )
''')


def test_good_network_loads_and_checks():
    build = load_network_source(GOOD)
    assert isinstance(build(3, 1, 8), nn.Module)
    model = check_network(GOOD, num_classes=3, in_channels=1, image_size=8)
    assert model(__import__("torch").rand(5, 1, 8, 8)).shape == (5, 3)


def test_dataclasses_and_future_annotations_work_in_custom_files():
    source = textwrap.dedent('''\
        from __future__ import annotations
        import dataclasses
        from torch import nn

        @dataclasses.dataclass
        class Config:
            width: int = 4

        def build(num_classes, in_channels, image_size):
            return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))
    ''')
    assert check_network(source, 2, 1, 4)[1].out_features == 2


def test_name_error_at_build_reports_its_line():
    source = GOOD.replace("nn.ReLU(),", "nn2.ReLU(),")  # line 7
    with pytest.raises(NetworkError) as err:
        check_network(source, 3, 3, 8)
    assert err.value.lineno == 7
    assert err.value.message == "line 7: NameError: name 'nn2' is not defined"
    assert err.value.filename == "network.py"


def test_error_in_forward_reports_the_users_line():
    source = textwrap.dedent('''\
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, num_classes):
                super().__init__()
                self.fc = nn.Linear(10, num_classes)

            def forward(self, x):
                return self.fc(x.flatten(1))

        def build(num_classes, in_channels, image_size):
            return Net(num_classes)
    ''')
    with pytest.raises(NetworkError) as err:
        check_network(source, 3, 3, 8)
    # The line to change is the one that made the layer (issue 31.9: it was forward's line 10).
    assert err.value.lineno == 7
    assert err.value.message == "line 7: layer 'fc' (Linear) expects 10 inputs, gets 192 (called at line 10)"


def test_a_layer_in_a_sequential_or_a_block_points_at_the_line_that_made_it():
    source = textwrap.dedent('''\
        from torch import nn

        class Block(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.conv = nn.Conv2d(channels, 8, 3)

            def forward(self, x):
                return self.conv(x)

        def build(num_classes, in_channels, image_size):
            return nn.Sequential(
                Block(in_channels),
                nn.Flatten(),
                nn.Linear(123, num_classes),
            )
    ''')
    with pytest.raises(NetworkError) as err:
        check_network(source, 3, 3, 8)
    assert err.value.lineno == 15 and err.value.message.startswith("line 15: layer '2' (Linear) expects 123 inputs")
    wrong_channels = source.replace("nn.Conv2d(channels, 8, 3)", "nn.Conv2d(channels + 1, 8, 3)")
    with pytest.raises(NetworkError) as err:
        check_network(wrong_channels, 3, 3, 8)
    assert err.value.lineno == 6 and "expects 4 input channels, gets 3 (called at line 9)" in err.value.message


def test_syntax_error_reports_its_line():
    source = GOOD.replace("image_size):", "image_size)")  # line 4 loses its colon
    with pytest.raises(NetworkError) as err:
        load_network_source(source, filename="mynet.py")
    assert err.value.lineno == 4
    assert "SyntaxError" in err.value.message and err.value.filename == "mynet.py"


def test_error_at_import_reports_its_line():
    with pytest.raises(NetworkError, match=r"^line 2: ZeroDivisionError"):
        load_network_source("x = 1\ny = 1 / 0\n")


def test_exit_in_user_code_is_an_error_not_an_exit():
    with pytest.raises(NetworkError, match=r"^line 2: SystemExit: 3"):
        load_network_source("import sys\nsys.exit(3)\n")


def test_missing_build_is_explained():
    with pytest.raises(NetworkError, match="must define a function build") as err:
        load_network_source("import torch\n")
    assert err.value.lineno is None


def test_build_must_return_a_module():
    with pytest.raises(NetworkError, match="must return a torch.nn.Module"):
        check_network("def build(n, c, s):\n    return 42\n", 3, 3, 8)


def test_wrong_output_shape_is_reported_clearly():
    source = GOOD.replace("nn.Linear(4, num_classes)", "nn.Linear(4, 10)")
    with pytest.raises(NetworkError) as err:
        check_network(source, num_classes=3, in_channels=3, image_size=8)
    message = err.value.message
    assert "(2, 10)" in message and "(2, 3)" in message and "num_classes=3" in message


def test_bad_auxiliary_output_is_reported():
    source = textwrap.dedent('''\
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.fc = nn.Linear(3, n)
            def forward(self, x):
                logits = self.fc(x.mean((2, 3)))
                return (logits, logits[:, :1]) if self.training else logits

        def build(num_classes, in_channels, image_size):
            return Net(num_classes)
    ''')
    with pytest.raises(NetworkError, match="auxiliary output 1 in training mode"):
        check_network(source, 4, 3, 8)


def test_isolated_check_reports_layers_and_ignores_prints():
    source = "print('hello from the user')\n" + GOOD
    result = check_network_isolated(source, num_classes=3, in_channels=1, image_size=8)
    assert result["ok"] is True, result
    assert result["params"] == 4 * 9 + 4 + 4 * 3 + 3
    assert [layer["type"] for layer in result["layers"]][:2] == ["Conv2d", "ReLU"]
    assert result["output_shape"] == [3]


# The child's work, run in this process (the subprocess tests above cover the plumbing).
def test_check_request_reports_user_errors_with_lines():
    source = GOOD.replace("nn.ReLU(),", "nn2.ReLU(),")
    result = run_check({"source": source, "num_classes": 3, "in_channels": 3, "image_size": 8})
    assert result == {"ok": False, "error": "line 7: NameError: name 'nn2' is not defined", "line": 7}


def test_check_request_for_a_standard_network_by_name():
    result = run_check({"network": "lenet", "num_classes": 10, "in_channels": 1, "image_size": None})
    assert result["ok"] is True, result
    assert result["params"] == 431080 and result["input_shape"] == [1, 28, 28]
    result = run_check({"network": "lenet5", "num_classes": 10, "in_channels": 1})
    assert result["ok"] is False and "valid names" in result["error"]


def test_isolated_check_times_out():
    result = check_network_isolated("while True:\n    pass\n", 3, 3, 8, timeout=3)
    assert result["error"].startswith("the check took longer than 3 s")
    assert result["ok"] is False and result["transient"] and result["timed_out"]
    assert "build" not in result["error"]  # never "does not build"


def test_isolated_check_survives_a_crash():
    result = check_network_isolated("import os\nos._exit(3)\n", 3, 3, 8)
    assert result["ok"] is False and "(exit code 3)" in result["error"] and result["transient"]


def test_isolated_check_needs_source_or_name():
    with pytest.raises(ValueError):
        check_network_isolated(None, 3, 3, 8)
