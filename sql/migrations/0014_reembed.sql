-- `corpusmem reembed`: vectors of another embedding model kept beside the served ones.
--
-- While a reembed computes, the new model's vectors land here, one row per (model, source row),
-- and reads keep using the vector columns of the pinned model. The switch moves them into the
-- vector columns and the served vectors here under the old pin, in one transaction with the pin;
-- `corpusmem reembed --drop-previous` deletes those. `text_hash` is md5 of the text the vector was
-- made from: a row whose text changed since (a relabelled fact, a refreshed entity profile) is
-- computed again. The column has no dimension: one table holds vectors of every model.

CREATE TABLE reembed_vectors (
    model       text NOT NULL,
    source      text NOT NULL CHECK (source IN ('chunks', 'claims', 'facts', 'entities')),
    row_id      uuid NOT NULL,
    text_hash   text NOT NULL,
    embedding   vector NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, source, row_id)
);

-- One row per switch of the pin: which vectors became previous, and when.
CREATE TABLE reembed_switches (
    switched_at     timestamptz NOT NULL DEFAULT now() PRIMARY KEY,
    previous_model  text NOT NULL,
    previous_dim    integer NOT NULL,
    model           text NOT NULL,
    dim             integer NOT NULL,
    dropped_at      timestamptz
);
