"""Lesson 04's exercises, in the order the lesson teaches them: count backend switches, find the
ops that fall back in a trace, and rewrite an unsupported op (``aten::cumsum``, emulated) with
supported primitives; and the lesson's quiz."""

ORDER = ("count_switches", "find_fallbacks", "prefix_sum")
