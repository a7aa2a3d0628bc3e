"""Figures printed in Dhanaraj's thesis, chapter 4 and appendix C: the references that
:mod:`dyn_plugin.parallel` is compared with (tests/test_parallel_schedule.py,
validation/schedules.md).  Transcribed from the OCR of the thesis (seeds/004, checked in
/work/shared/notes/thesis-dhanaraj-friction.md §6); nothing here is computed by this package.

Known faults of the printed tables (not corrected here, reported by the tests):

* Table 4.3 lists 240 tasks, not 231: the last link's eight eliminated subtasks (Table 4.2)
  are kept, link 1 keeps 126 and 127 and lacks 119; 120-122 share layer 1 with 110, which
  they need.
* Table 4.7 (156 tasks) keeps 120, 121, 126, 127, 233 and drops 119, 128, 129 against
  Tables 4.2 and 4.6, and keeps 522, 523, 537 because Table 4.4 marks link 5's s_z non-zero
  (Table 2.7: z = 0).
* Table C.5 (six processors, 39 levels) runs 401 with 303, which it needs (level 5).
* Table C.11 (four processors, 39 levels) has 155 tasks (no 127, 132; 129 instead) and runs
  401 and 402 with 303 (level 6).
"""

from __future__ import annotations


def _table(text: str) -> tuple:
    """Rows of task codes (one row a layer or level), as printed, idle slots left out."""
    return tuple(tuple(int(code) for code in row.split()) for row in text.strip().splitlines())


GENERAL_ARM = {
    "source": "§4.3.1 (L1445-1451), Table 4.3, Appendix C Tables C.1-C.8",
    "tasks": 231, "layers": 27, "max_concurrency": 13, "speedup": 8.55, "efficiency": 0.6581,
    "levels": {1: 231, 2: 116, 3: 78, 4: 58, 5: 47, 6: 39, 7: 34, 8: 31, 9: 30, 13: 27},
}
"""The general six-link arm (six revolute joints, Table 4.2 eliminations only)."""

STANFORD = {
    "source": "§4.4, Tables 4.4-4.8, Appendix C Tables C.9-C.15",
    "tasks": 156, "layers": 27, "max_concurrency": 9,
    "levels": {1: 156, 2: 79, 3: 52, 4: 39, 5: 32, 6: 29, 7: 27, 8: 27},
    "ms_per_level": 0.135,
    "present_work_ms": {1: 21.06, 2: 10.67, 3: 7.02, 4: 5.26, 5: 4.32, 6: 3.92, 7: 3.65, 8: 3.65},
}
"""The customised Stanford arm.  Table 4.8's "present work" times are levels x 0.135 ms
(Intel 8086; 21.06 ms / 156 subtasks); 5.26 is 39 x 0.135 = 5.265 rounded down."""

TABLE_4_8 = {   # ms on an Intel 8086, Stanford arm; None: not given
    "Luh & Lin (1982)": {1: 24.8, 6: 9.67},
    "Kasahara & Narita (1985)": {1: 24.83, 2: 12.42, 3: 8.43, 4: 6.59, 5: 5.86, 6: 5.73, 7: 5.60},
    "Chen, Lee & Hou (1988)": {1: 24.83, 2: 12.42, 3: 8.44, 4: 6.59, 5: 5.72, 6: 5.70},
    "present work (Dhanaraj)": STANFORD["present_work_ms"],
}

TABLE_4_6 = {   # link -> subtasks printed as eliminated for sparsity (Stanford arm)
    1: (112, 113, 114, 115, 120, 121, 136, 133, 134),
    2: (212, 213, 214, 215, 220, 221, 222, 223, 233, 234, 236, 237),
    3: (312, 313, 314, 315, 316, 317, 320, 321, 322, 323, 333, 334, 335, 336, 337),
    4: (412, 413, 414, 415, 416, 417, 420, 421, 433, 434, 435, 436),
    5: (512, 513, 514, 515, 516, 517, 520, 521, 533, 534, 535, 536),
    6: (612, 613, 614, 615, 616, 617, 620, 621, 622, 623, 633, 634, 635, 636, 637),
}

TABLE_4_3 = _table("""
110 120 121 122 201 202
123 124 125 203 204 205
206 207 208 212 213 214 301 302
209 210 211 215 216 217 303 304 305
218 219 220 221 222 306 307 308 312 313 314 401 402
223 224 225 309 310 311 315 316 317 403 404 405
318 319 320 321 322 406 407 408 412 413 414 501 502
323 324 325 409 410 411 415 416 417 503 504 505
418 419 420 421 422 506 507 508 512 513 514 601 602
423 424 425 509 510 511 515 516 517 603 604 605
518 519 520 521 522 606 607 608 612 613 614
523 524 525 609 610 611 615 616 617
618 619 620 621 622
623 624 625
626 627 628 629 630 631
632 633 634 635 636 637 638 639 640
641 642 643 526 527 528 529 530 531
532 533 534 535 536 537 538 539 540
541 542 543 426 427 428 429 430 431
432 433 434 435 436 437 438 439 440
441 442 443 326 327 328 329 330 331
332 333 334 335 336 337 338 339 340
341 342 343 226 227 228 229 230 231
232 233 234 235 236 237 238 239 240
241 242 243 126 127 128 129 130 131
132 133 134 135 136 137 138 139 140
141 142 143
""")
"""Layered tasks of the general six-link arm, as printed (27 layers, 240 tasks)."""

TABLE_4_7 = _table("""
110 120 121 122 201 202
123 124 125 203 204 205
206 207 208
209 210 211 216 217 303
218 219 306 401 402
224 225 403 404 405
318 319 406 407 408 501 502
324 325 409 410 411 503 504 505
418 419 422 506 507 508 601 602
423 424 425 509 510 511 603 604 605
518 519 522 606 607 608
523 524 525 609 610 611
618 619
624 625
626 627 628 629
638
641 642 643 526 527 528 529 530 531
532 537 538 539 540
541 542 543 426 427 428 429 430 431
432 437 438 439 440
441 442 443 326 327 328 329 330 331
332 338 339 340
341 342 343 226 227 228 229 230 231
232 233 235 238 239 240
241 242 243 126 127 130 131
132 135 137 138 139 140
141 142 143
""")
"""Layered tasks of the customised Stanford arm, as printed (27 layers, 156 tasks)."""

TABLE_C5 = _table("""
110 120 121 122 201 202
123 124 125 203 204 205
206 207 208 212 213 214
301 302 209 210 211 215
216 217 303 304 305 401
218 219 220 221 222 306
307 308 312 313 314 402
223 224 225 309 310 311
315 316 317 403 404 405
318 319 320 321 322 406
407 408 412 413 414 501
502 323 324 325 409 410
411 415 416 417 503 504
505 418 419 420 421 422
506 507 508 512 513 514
601 602 423 424 425 509
510 511 515 516 517 603
604 605 518 519 520 521
522 606 607 608 612 613
614 523 524 525 609 610
611 615 616 617 527 528
618 619 620 621 622 529
623 624 625 427 428 429
626 627 628 629 327 328
636 637 638 326 329 226
641 642 643 526 530 531
532 533 534 535 536 537
538 539 540 426 430 431
541 542 543 436 437 438
432 433 434 435 439 440
441 442 443 330 331 227
332 333 334 335 336 337
338 339 340 228 229 230
341 342 343 231 236 237
232 233 234 235 238 239
240 126 129 130 131
241 242 243 136 137 138
132 133 134 135 139 140
141 142 143
""")
"""Six-processor schedule of the general six-link arm, as printed (39 levels)."""

TABLE_C11 = _table("""
110 120 121 122
201 202 123 124
125 203 204 205
206 207 208 126
209 210 211 216
217 303 401 402
218 219 306 403
224 225 404 405
318 319 406 407
408 501 502 324
325 409 410 411
503 504 505 418
419 422 506 507
508 601 602 423
424 425 509 510
511 603 604 605
518 519 522 606
607 608 523 524
525 609 610 611
618 619 526 527
624 625 528 529
626 627 628 629
638 537 538 426
641 642 643 530
531 427 428 429
532 539 540 326
541 542 543 430
431 438 327 328
432 437 439 440
441 442 443 329
330 331 226 227
332 338 339 340
341 342 343 228
229 230 231 129
232 233 235 238
239 240 130 131
241 242 243 137
135 138 139 140
141 142 143
""")
"""Four-processor schedule of the customised Stanford arm, as printed (39 levels)."""


def reference(model, mode: str):
    """The thesis's figures for this model and mode, or None: the general arm for any
    chain of six revolute joints in the general mode, the Stanford figures for the bundled
    ``stanford`` robot in the customised mode -- recognised by the file it was loaded from,
    not by its name (any URDF may call itself "stanford"), and as loaded: no joint locked,
    no payload attached."""
    chain = [int(p) for p in model.parents] == list(range(-1, model.n - 1))
    if mode == "general" and chain and model.n == 6 and all(t == "revolute" for t in model.joint_types):
        return GENERAL_ARM
    if mode == "customised" and _is_bundled(model, "stanford"):
        return STANFORD
    return None


def _is_bundled(model, name: str) -> bool:
    """``model`` is the bundled robot ``name`` as loaded from its file (nothing locked or added)."""
    from ..robots import bundled_name

    return bundled_name(model) == name and not model.held_joints and not model.payloads
