"""`cluster.yaml` is a configuration the installed Ray's cluster launcher accepts, and the KubeRay
example names the job and passes the settings to every node."""

import json
import os

import jsonschema
import ray.autoscaler
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from jobs.runtime import PROJECT_ROOT


def _schema() -> dict:
    with open(os.path.join(os.path.dirname(ray.autoscaler.__file__), "ray-schema.json")) as f:
        return json.load(f)


def test_cluster_yaml_validates_against_rays_own_schema():
    config = yaml.safe_load((PROJECT_ROOT / "cluster.yaml").read_text())
    jsonschema.validate(config, _schema())
    validate_config(prepare_config(config))   # what `ray up` does after filling in the defaults
    groups = config["available_node_types"]
    assert config["head_node_type"] == "head" and {"cpu_workers", "gpu_workers"} <= set(groups)
    assert "[gpu" in " ".join(groups["gpu_workers"]["worker_setup_commands"])
    assert "[gpu" not in " ".join(groups["cpu_workers"]["worker_setup_commands"])
    settings = " ".join(config["setup_commands"])     # every node, head included
    assert "CORPUSMEM_DSN=" in settings and "CORPUSMEM_OBJECT_STORE=" in settings
    assert all(".corpusmem.env" in c for c in config["worker_start_ray_commands"] if c.startswith("."))


def test_a_cluster_yaml_with_a_misspelt_key_is_refused_by_the_same_check():
    config = yaml.safe_load((PROJECT_ROOT / "cluster.yaml").read_text())
    config["available_node_types"]["cpu_workers"]["max_worker"] = 3
    try:
        jsonschema.validate(config, _schema())
    except jsonschema.ValidationError as err:
        assert "max_worker" in str(err)
    else:
        raise AssertionError("the schema accepted an unknown key")


def test_the_rayjob_example_names_the_job_and_gives_every_node_the_settings():
    job = yaml.safe_load((PROJECT_ROOT / "deploy" / "rayjob.yaml").read_text())
    assert job["kind"] == "RayJob" and job["spec"]["entrypoint"].startswith("python -m jobs.import_corpus ")
    assert job["spec"]["metadata"]["job_name"].startswith("corpusmem import ")
    spec = job["spec"]["rayClusterSpec"]
    pods = [spec["headGroupSpec"]] + spec["workerGroupSpecs"]
    for pod in pods:
        env = {e["name"] for c in pod["template"]["spec"]["containers"] for e in c["env"]}
        assert {"CORPUSMEM_DSN", "CORPUSMEM_OBJECT_STORE"} <= env
