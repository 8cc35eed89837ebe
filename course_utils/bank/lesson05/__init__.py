"""Lesson 05's exercises: contiguous strides, is_contiguous, the storage index of an element, view
or copy, and fixing a model's non-contiguous parameters with ``audit``; and the lesson's quiz."""
