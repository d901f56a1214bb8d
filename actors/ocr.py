"""The OCR stage: the owner of the text detection and recognition models (a resident task on
CPUs, `actors/resident.py`; an actor on a GPU).

RapidOCR (PP-OCRv4 detection and recognition, ONNX, shipped inside the `rapidocr-onnxruntime`
wheel: nothing is downloaded) is loaded once per worker, when the first row that needs it comes
(a corpus without images or scans never loads it), and kept for the next run. The stage takes the rows
`convert` marked for OCR (images, PDFs with pages that have no text layer) and fills their
`document.md` page by page (`pipeline/documents/ocr_convert.py`); every other row passes through
untouched. A bad input is a failed row with its reason, never a failed batch.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pipeline import records
from pipeline.documents.convert import OCR, ConversionError
from pipeline.documents.ocr_convert import ocr_row
from pipeline.documents.ocr_text import Box, Line

if TYPE_CHECKING:
    from PIL.Image import Image

PACKAGE = "rapidocr-onnxruntime"
# adaptive threshold: the neighbourhood (pixels, odd) and how much darker than its mean a pixel
# must be to count as ink
_THRESHOLD_BLOCK_PX = 51
_THRESHOLD_OFFSET = 15


class Recogniser:
    """The model: an RGB image → its text lines (box, text, confidence), in the model's order."""

    def __init__(self, gpu: bool = False, threads: int | None = None) -> None:
        import cv2
        from rapidocr_onnxruntime import RapidOCR

        # ONNX Runtime's CUDA provider when the actor holds a GPU and the runtime has one
        options: dict = {"det_use_cuda": True, "cls_use_cuda": True, "rec_use_cuda": True} if gpu else {}
        if threads is not None:   # None: ONNX Runtime's and OpenCV's default, every core
            options["intra_op_num_threads"] = threads
            # OpenCV's own pool (the threshold, RapidOCR's resizing) would otherwise take every core
            # too: two single-threaded actors on two cores ran 10-15 % slower per page with it
            cv2.setNumThreads(threads)
        self._engine = RapidOCR(**options)
        self.version = f"rapidocr-onnxruntime {version(PACKAGE)}"

    def __call__(self, image: Image) -> list[Line]:
        import cv2

        # Black on white, each pixel against its neighbourhood: the JPEG ringing of scans and photos
        # otherwise makes the recogniser run words together (a 150 DPI JPEG page lost most spaces
        # of a line; thresholded, none), and a threshold for the whole image (Otsu's) lost faint
        # text above a shadow. The block spans a few lines of 10-12 pt text at 150-200 DPI.
        gray = np.asarray(image.convert("L"))
        binary = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY,
                                       _THRESHOLD_BLOCK_PX, _THRESHOLD_OFFSET)
        found, _elapsed = self._engine(cv2.cvtColor(binary, cv2.COLOR_GRAY2BGR))
        return [Line(text, Box.around(box), float(score)) for box, text, score in found or []]


class Ocr:
    """Ray Data callable class: a batch of rows → the same rows, OCR'd where `convert` asked."""

    def __init__(self, max_pixels: int, gpu: bool = False, threads: int | None = None,
                 describe_next: bool = False) -> None:
        """`describe_next`: a vision model describes the pages after this stage, so a document
        where nothing is recognised goes on to it instead of failing (`ocr_convert.ocr_document`)."""
        self._model_args = (gpu, threads)
        self._recogniser: Recogniser | None = None
        self._max_pixels = max_pixels
        self._describe_next = describe_next

    @property
    def _recognise(self) -> Recogniser:
        if self._recogniser is None:
            self._recogniser = Recogniser(*self._model_args)
        return self._recogniser

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = records.clock()
        rows = records.to_rows(batch)
        for row in rows:
            if records.is_active(row) and row["converter"] == OCR and row["markdown"] is None:
                try:
                    ocr_row(row, self._recognise, self._max_pixels, self._recognise.version,
                            describe_next=self._describe_next)
                except ConversionError as err:
                    records.fail(row, "ocr", str(err))
                except Exception as err:  # a per-row error column, never a failed batch
                    records.fail(row, "ocr", f"{type(err).__name__}: {err}")
        records.share_seconds(rows, "ocr", started)
        return records.to_table(rows)
