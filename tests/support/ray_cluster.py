"""A Ray cluster of a head and one worker node on this machine, one CPU each, for the multi-node
tests: `python -m tests.support.ray_cluster` prints the cluster's address, the nodes' metrics export
ports and the dashboard's address as one JSON line, then obeys `remove-worker`, `add-worker` and `quit` lines on stdin.

It runs in its own process because a test session's process already drives the session's
local Ray, and one process drives one Ray."""

from __future__ import annotations

import json
import sys

from ray.cluster_utils import Cluster

from tests.support.ports import free_port


def main() -> None:
    ports, dashboard = {"head": free_port()}, free_port()
    # Every node's agent gets a port of its own: the default one may be held by another Ray on
    # this machine (a test session's), and a head without its agent takes no job submissions.
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "metrics_export_port": ports["head"], "include_dashboard": True,
        "dashboard_port": dashboard, "dashboard_agent_listen_port": free_port()})

    def add_worker():
        ports["worker"] = free_port()
        node = cluster.add_node(num_cpus=1, metrics_export_port=ports["worker"],
                                dashboard_agent_listen_port=free_port())
        cluster.wait_for_nodes()
        return node

    worker = add_worker()
    print(json.dumps({"address": cluster.address, "metrics_ports": ports,
                      "dashboard": f"http://127.0.0.1:{dashboard}"}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "remove-worker" and worker is not None:
            cluster.remove_node(worker, allow_graceful=False)
            worker = None
        elif command == "add-worker" and worker is None:
            worker = add_worker()
        elif command == "quit":
            break
        print(json.dumps({"done": command, "metrics_ports": ports}), flush=True)
    cluster.shutdown()


if __name__ == "__main__":
    main()
