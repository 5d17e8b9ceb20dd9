"""The new-model form and a network's training recipe (issue 41.2): a detection dataset ticks
yolo_n, whose row and API entry carry its recipe (AdamW, cosine with warm-up, EMA, mosaic), the
form has fields for every one of its settings, and the body the form's own script builds from the
filled-in fields creates a job that trains by the recipe."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

STATIC = Path(__file__).parents[2] / "src" / "trainyard" / "web" / "static"


def add_detection_dataset(ctx):
    job = ctx.manager.create("dataset", "boxes", {"name": "boxes", "task": "detection"}, needs={"pool": "dataset"})
    ctx.store.update_job(job.id, summary={"task": "detection", "classes": ["cat", "dog"],
                                          "images": {"train": 40, "val": 10}, "width": 96, "height": 96,
                                          "channels": 3})
    return job


class FormFields(HTMLParser):
    """The model form's fields as the page renders them: {name: value}, a checkbox as a bool."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, object] = {}
        self.select: str | None = None
        self.recipes: dict[str, dict] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-recipe" in a:
            self.recipes[a["data-network"]] = json.loads(a["data-recipe"])
        elif tag == "input" and a.get("name") and a.get("type") not in ("radio", "search"):
            if a.get("type") == "checkbox":
                self.values.setdefault(a["name"], "checked" in a)
            else:
                self.values[a["name"]] = a.get("value") or ""
        elif tag == "select":
            self.select = a.get("name")
        elif tag == "option" and self.select and ("selected" in a or self.select not in self.values):
            self.values[self.select] = a.get("value")  # None: the option's text (handle_data)

    def handle_data(self, data):
        if self.select and self.values.get(self.select, "") is None:
            self.values[self.select] = data.strip()

    def handle_endtag(self, tag):
        if tag == "select":
            self.select = None


def test_the_networks_api_gives_each_networks_recipe(idle_client):
    networks = {n["name"]: n for n in idle_client.get("/api/networks").json()["networks"]}
    recipe = networks["yolo_n"]["recipe"]
    assert recipe["solver"] == "adamw" and recipe["ema"] > 0 and recipe["augment"]["mosaic"] > 0
    assert recipe["lr"]["policy"] == "cosine" and recipe["lr"]["warmup_percent"] > 0
    assert networks["lenet"]["recipe"] == {}


def test_a_detection_dataset_ticks_yolo_n_and_the_form_shows_its_recipe(idle_client):
    boxes = add_detection_dataset(idle_client.app.state.ctx)
    html = idle_client.get(f"/models/new?dataset={boxes.id}").text
    assert 'name="network" value="yolo_n" id="net-yolo_n" checked' in html
    assert 'data-task="detection" data-recommended="yolo_n"' in html  # the form follows a dataset chosen later
    assert 'id="recipe-note"' in html
    assert "ADAMW, cosine LR from 0.002 after a 10% warm-up, EMA 0.9999, mosaic (off for the last 30%)" in html
    form = FormFields()
    form.feed(html)
    assert form.recipes["yolo_n"]["solver"] == "adamw" and form.recipes["lenet"] == {}
    for field in ("ema", "mosaic", "mosaic_off_percent", "hue_shift", "saturation_shift", "value_shift",
                  "scale_jitter", "flip", "warmup_percent", "solver", "lr_policy"):
        assert field in form.values, field


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the form's own modules")
def test_the_body_the_form_sends_for_yolo_n_trains_by_its_recipe(idle_client, monkeypatch):
    import trainyard.jobs.kinds.precheck as precheck

    monkeypatch.setattr(precheck, "check_all", lambda ctx, specs: None)  # the network check builds torch
    ctx = idle_client.app.state.ctx
    boxes = add_detection_dataset(ctx)
    form = FormFields()
    form.feed(idle_client.get(f"/models/new?dataset={boxes.id}").text)
    body = form_body(form.values, form.recipes["yolo_n"])
    body.update(name="yolo-by-form", datasets=[boxes.id], networks=["yolo_n"])
    answer = idle_client.post("/api/models", json=body)
    assert answer.status_code == 201, answer.text
    spec = json.loads((ctx.manager.folder(answer.json()["jobs"][0]["id"]).path / "spec.json").read_text())
    assert spec["solver"] == "adamw" and spec["ema"] == 0.9999 and spec["lr"]["policy"] == "cosine"
    assert spec["lr"]["base_lr"] == 0.002 and spec["lr"]["warmup_percent"] == 10.0
    assert spec["augment"]["mosaic"] == 1.0 and spec["augment"]["mosaic_off_percent"] == 30.0
    assert spec["augment"]["flip"] == "lr" and spec["augment"]["saturation_shift"] == 0.7


def form_body(values: dict, recipe: dict) -> dict:
    """What model_new.js sends once model_recipe.js has filled the recipe in: the page's modules
    run in node over the rendered fields (form_fields.js reads ``f[name].value`` / ``.checked``)."""
    script = f"""
import {{ formFields }} from './form_fields.js';
import {{ recipeFields }} from './model_recipe.js';
const values = {{ ...{json.dumps(values)}, ...recipeFields({json.dumps(recipe)}) }};
const f = Object.fromEntries(Object.entries(values).map(([k, v]) =>
  [k, typeof v === "boolean" ? {{ checked: v, type: "checkbox" }} : {{ value: String(v) }}]));
const fields = formFields(f);
console.log(JSON.stringify({{ settings: fields.trainSettings(), base_lrs: fields.numbers("base_lr", "lr") }}));
"""
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=STATIC, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
