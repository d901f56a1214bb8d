"""Drives the `/query/*` routes of `corpusmem serve` with the real `remember` 0.17.2 client (Python 3.12+).

Usage: python remember_query_client.py BASE_URL — prints one JSON object: for each step, what the
client returned (after its own models parsed the response, so a response that breaks them is a
failure here) or the error it raised, with its status and code.
"""

import json
import sys

from remember import Client, MemoryApiError


def main(url: str) -> None:
    c = Client(base_url=url, api_key="test-secret")
    out = {}

    def step(name, fn):
        try:
            out[name] = {"ok": True, "value": fn()}
        except MemoryApiError as err:
            out[name] = {"ok": False, "status": err.status_code, "code": err.code, "detail": str(err.detail)}
        except Exception as err:  # report, never hide
            out[name] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:2000]}

    def value(name):
        return out[name].get("value") or {}

    step("space", lambda: c.describe_query_space(include_examples=True))
    step("space_facts", lambda: c.describe_query_space(pattern="facts_*"))
    step("search", lambda: c.search_query_space(query="current facts of an entity", k=5))
    step("search_blank", lambda: c.search_query_space(query="   "))
    step("sources", lambda: c.query_sql(sql="SELECT source_kind, count(*) AS documents FROM documents_live "
                                            "GROUP BY source_kind ORDER BY documents DESC", max_rows=50))
    step("dana", lambda: dict(c.open_query("SELECT entity_id FROM entities_current WHERE canonical_name = $1",
                                           parameters=["Dana"])))
    step("ravi", lambda: dict(c.open_query("SELECT entity_id FROM entities_current WHERE canonical_name = $1",
                                           parameters=["Ravi"])))
    dana = (value("dana").get("rows") or [[None]])[0][0]
    ravi = (value("ravi").get("rows") or [[None]])[0][0]
    deployment = value("sources").get("deployment_id")
    step("facts", lambda: dict(c.open_query(
        "SELECT fact_label, evidence_count FROM facts_current WHERE subject_entity_id = $1::uuid "
        "ORDER BY fact_label", parameters=[dana])))
    step("semantic", lambda: c.query_sql(
        sql="SELECT s.rank, c.claim_text FROM semantic_claims($1, 5) AS s JOIN claims_live AS c "
            "ON c.claim_id = s.claim_id ORDER BY s.rank", parameters=["who leads the billing migration"]))
    step("graph", lambda: c.query_sql(
        sql="SELECT hops, relation_ids, node_ids FROM graph_neighborhood($1::uuid, $2::uuid, 2) "
            "ORDER BY hops, relation_ids", parameters=[deployment, dana]))
    step("delete", lambda: c.query_sql(sql="DELETE FROM facts_current"))
    step("pg_class", lambda: c.query_sql(sql="SELECT * FROM pg_catalog.pg_class"))
    step("capped", lambda: c.query_sql(sql="SELECT a.claim_id FROM claims_live AS a CROSS JOIN claims_live AS b",
                                       max_rows=5000))
    step("explain", lambda: dict(c.explain_query("SELECT count(*) FROM claims_live WHERE claim_text ~~* $1",
                                                 parameters=["%billing%"])))
    step("saved", lambda: c.list_saved_queries())
    step("saved_examples", lambda: c.list_saved_queries(namespace="examples", status="active"))
    step("saved_drafts", lambda: c.list_saved_queries(status="draft"))
    step("describe_saved", lambda: c.describe_saved_query(namespace="examples", name="relation_current"))
    step("run_saved", lambda: c.run_saved_query(namespace="examples", name="relation_current", parameters=[dana]))
    step("run_saved_graph", lambda: c.run_saved_query(namespace="examples", name="graph_path",
                                                      parameters=[deployment, dana, ravi]))
    step("run_saved_unknown", lambda: c.run_saved_query(namespace="examples", name="nope"))
    step("run_saved_version", lambda: c.run_saved_query(namespace="examples", name="relation_current", version=7,
                                                        parameters=[dana]))
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
