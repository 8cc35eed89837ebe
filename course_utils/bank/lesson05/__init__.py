"""Lesson 05's exercises, in the order the lesson teaches them: contiguous strides, is_contiguous,
the storage index of an element, view or copy, and fixing a model's non-contiguous parameters with
``audit``; and the lesson's quiz."""

ORDER = ("contiguous_strides", "is_contiguous", "storage_index", "view_or_copy", "fix_layout")
