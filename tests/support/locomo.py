"""A LoCoMo conversation in the shape of the benchmark's files, small enough to read whole."""

from __future__ import annotations

CONVERSATION = {
    "speaker_a": "John", "speaker_b": "Maria",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "John", "dia_id": "D1:1", "text": "I finally finished the marathon in Chicago last weekend!"},
        {"speaker": "Maria", "dia_id": "D1:2", "text": "Wow!", "blip_caption": "a photo of a medal"},
    ],
    "session_2_date_time": "9:05 am on 2 June, 2023",
    "session_2": [{"speaker": "Maria", "dia_id": "D2:1", "text": "My sister adopted a puppy named Biscuit."}],
    "qa": [
        {"question": "Where did John run a marathon?", "answer": "Chicago", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the puppy called?", "answer": "Biscuit", "evidence": ["D2:1"], "category": 1},
        {"question": "Adversarial", "answer": "", "evidence": ["D2:1"], "category": 5},
        {"question": "No evidence", "answer": "x", "evidence": [], "category": 2},
    ],
}
