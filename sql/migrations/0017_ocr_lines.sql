-- OCR: where each recognised line of a scanned page or an image lies in `document.md` and on
-- its page, so a claim can cite "page 3, lines 4–6"; and each page of an OCR'd document, kept
-- from its text layer or recognised, with the reason when nothing was recognised on it.
-- No text is stored here (offsets only): a deleted document's text stays out of every surface.

CREATE TABLE ocr_pages (
    version_id        uuid NOT NULL REFERENCES versions,
    page              integer NOT NULL CHECK (page >= 1),
    source            text NOT NULL CHECK (source IN ('ocr', 'text_layer')),
    -- pixels the page was recognised at (0 for a text layer)
    width             integer NOT NULL CHECK (width >= 0),
    height            integer NOT NULL CHECK (height >= 0),
    -- the page's section of document.md, its heading included
    char_start        integer NOT NULL,
    char_end          integer NOT NULL CHECK (char_end >= char_start),
    lines             integer NOT NULL CHECK (lines >= 0),
    reason            text CHECK (reason IN ('no_text_recognised')),
    PRIMARY KEY (version_id, page)
);

CREATE TABLE ocr_lines (
    version_id        uuid NOT NULL,
    page              integer NOT NULL,
    -- 1-based, down the page in reading order; `block` groups the lines of one paragraph
    line              integer NOT NULL CHECK (line >= 1),
    block             integer NOT NULL CHECK (block >= 1),
    char_start        integer NOT NULL,
    char_end          integer NOT NULL CHECK (char_end > char_start),
    -- the line's box as fractions of the page's width and height
    x0                real NOT NULL,
    y0                real NOT NULL,
    x1                real NOT NULL,
    y1                real NOT NULL,
    confidence        real NOT NULL,
    -- kept, but below the recogniser's trustworthy score (pipeline/documents/ocr_text.py)
    low_confidence    boolean NOT NULL,
    PRIMARY KEY (version_id, page, line),
    FOREIGN KEY (version_id, page) REFERENCES ocr_pages
);
-- a claim's span → the lines it covers
CREATE INDEX ocr_lines_span ON ocr_lines (version_id, char_start);
