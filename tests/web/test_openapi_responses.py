"""/openapi.json documents what every JSON route under /api answers (web/schemas/), and
that any of them may refuse with ``{"detail": one line}``: scripts and the pages rely on both."""

from __future__ import annotations

from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app

WITHOUT_MODEL: set[str] = set()  # routes answering a bare dict: none left


def _openapi(settings) -> dict:
    app = create_app(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    return app.openapi()


def _json_answers(spec: dict):
    """(label, schema of its JSON 2xx answer) of each /api operation that answers JSON."""
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if code.startswith("2") and schema:  # files and streams document an empty schema
                    yield f"{method.upper()} {path}", schema


def test_every_json_route_documents_its_answer(settings):
    spec = _openapi(settings)
    answers = dict(_json_answers(spec))
    bare = {label for label, schema in answers.items()
            if not ({"$ref", "properties", "items", "anyOf", "oneOf"} & schema.keys())}
    assert len(answers) >= 35
    assert bare == WITHOUT_MODEL & answers.keys()
    job = spec["components"]["schemas"]["JobBrief"]
    assert {"id", "kind", "name", "status", "error"} <= set(job["required"])  # docs/interface.md


def test_every_operation_documents_its_refusals(settings):
    spec = _openapi(settings)
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            refused = operation["responses"]["4XX"]["content"]["application/json"]["schema"]
            assert refused == {"$ref": "#/components/schemas/Error"}, (method, path)
    assert spec["components"]["schemas"]["Error"]["required"] == ["detail"]


def test_files_and_streams_document_their_media_type_not_an_empty_json_schema(settings):
    spec = _openapi(settings)
    declared = {(method.upper(), path): set(operation["responses"]["200"].get("content", {}))
                for path, operations in spec["paths"].items() for method, operation in operations.items()
                if "200" in operation["responses"]}
    assert declared[("GET", "/api/datasets/{dataset_id}/mean.png")] == {"image/png"}
    assert declared[("GET", "/api/datasets/{dataset_id}/images/{split}/{index}.png")] == {"image/png"}
    assert declared[("POST", "/api/datasets/preview")] == {"image/png"}
    assert declared[("GET", "/api/models/{model_id}/classify-many/{job_id}/images/{row}")] == {"image/png"}
    assert declared[("GET", "/api/jobs/{job_id}/events")] == {"text/event-stream"}
    empty = sorted(f"{method.upper()} {path}" for path, operations in spec["paths"].items()
                   for method, operation in operations.items()
                   for code, response in operation["responses"].items()
                   if code.startswith("2")
                   and response.get("content", {}).get("application/json", {}).get("schema") == {})
    assert empty == []


def _reached(spec: dict) -> set[str]:
    """The component schemas that some 2xx JSON answer refers to, directly or through another."""
    found: set[str] = set()
    todo = [schema for _, schema in _json_answers(spec)]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/components/schemas/") and ref.rpartition("/")[2] not in found:
                found.add(ref.rpartition("/")[2])
                todo.append(spec["components"]["schemas"][ref.rpartition("/")[2]])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def test_every_answer_names_its_fields_and_allows_no_other(settings):
    """What /openapi.json says an answer holds is all it holds (issue 32: response documents as
    the response models): no answer's object schema is open to fields it does not name."""
    spec = _openapi(settings)
    reached = _reached(spec)
    assert {"JobBrief", "DatasetDetail", "ModelDetail", "InferenceJob", "WeightsRow", "SystemReport"} <= reached
    schemas = spec["components"]["schemas"]
    open_ = sorted(name for name in reached if "properties" in schemas[name]
                   and schemas[name].get("additionalProperties") is not False)
    assert open_ == []
