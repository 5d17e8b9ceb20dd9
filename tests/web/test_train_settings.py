"""The main input, ``POST /api/models``'s ``settings``, is a typed `TrainSettings`: documented in
the API's schema, an unknown key refused by name, and its defaults the CLI's (one source)."""

from __future__ import annotations

import inspect

from trainyard.cli.train import train
from trainyard.jobs.kinds.training import TrainRequest
from trainyard.training.setting_defaults import SETTINGS
from trainyard.training.spec import stored_spec
from trainyard.training.train_settings import TrainSettings

# cli/train.py option -> its setting, where the names differ (docs/interface.md fixes the options')
OPTION_OF = {"lr_policy": "lr.policy", "lr_step": "lr.step_percent", "warmup": "lr.warmup_percent"}


def test_the_schema_documents_every_setting_and_allows_no_other(idle_client):
    schema = idle_client.get("/openapi.json").json()["components"]["schemas"]
    settings = schema["TrainSettings"]
    assert settings.get("additionalProperties") is False
    assert {"epochs", "solver", "lr", "momentum", "precision", "seed"} <= set(settings["properties"])
    assert all(field.get("description") for field in settings["properties"].values())
    assert settings["properties"]["epochs"]["default"] == 30


def test_an_unknown_setting_is_a_422_naming_it_and_nothing_is_created(idle_client):
    response = idle_client.post("/api/models", json={"name": "m", "datasets": ["d"], "networks": ["lenet"],
                                                    "settings": {"epochs": 1, "epochz": 3}})
    assert response.status_code == 422, response.text
    assert "epochz" in response.json()["detail"]
    assert idle_client.get("/api/models").json()["models"] == []


def test_an_old_clients_settings_read_as_before():
    request = TrainRequest.model_validate({"name": "m", "datasets": ["d"], "settings": {
        "epochs": 2, "lr": {"policy": "fixed", "base_lr": 0.1}, "batch_size": 8, "seed": 3, "crop": 24}})
    assert (request.settings.epochs, request.settings.lr.policy, request.settings.seed) == (2, "fixed", 3)
    assert request.settings.model_dump(exclude_unset=True) == {
        "epochs": 2, "lr": {"policy": "fixed", "base_lr": 0.1}, "batch_size": 8, "seed": 3, "crop": 24}


# The settings a network's recipe may set (networks/table.py's YOLO_RECIPE): cli/train.py's recipe_option.
RECIPE_OPTIONS = {"solver", "lr.policy", "lr.warmup_percent", "momentum", "weight_decay", "ema"}


def test_the_cli_api_and_spec_take_each_default_from_one_place():
    defaults = stored_spec({})
    for name, setting in SETTINGS.items():
        owner, _, field = name.rpartition(".")
        value = getattr(defaults.lr if owner else defaults, field)
        assert value == (list(setting.default) if isinstance(setting.default, tuple) else setting.default), name
    assert set(TrainSettings.model_fields) - {"lr", "augment"} == {n for n in SETTINGS if "." not in n}
    for parameter in inspect.signature(train).parameters.values():
        name = OPTION_OF.get(parameter.name, parameter.name)
        if name in RECIPE_OPTIONS:  # none unless given, so a network's recipe holds: the help says the default
            assert parameter.default.default is None and f"else {SETTINGS[name].default})" in parameter.default.help
        elif name in SETTINGS and name != "batch_size":  # --batch-size takes a sweep: B1,B2 or a range
            assert parameter.default.default == SETTINGS[name].default, name


def test_a_sweeps_early_stop_grace_has_one_default_for_the_cli_and_the_api():
    from trainyard.jobs.runs.early_stop import DEFAULT_MIN_EPOCHS
    from trainyard.training.setting_defaults import EARLY_STOP_MIN_EPOCHS

    option = inspect.signature(train).parameters["early_stop_min_epochs"].default
    assert option.default == TrainRequest.model_fields["early_stop_min_epochs"].default == DEFAULT_MIN_EPOCHS
    assert (option.default, option.help) == (EARLY_STOP_MIN_EPOCHS.default, EARLY_STOP_MIN_EPOCHS.help)
