"""The timed spot-the-bug rounds: a round's session (``mode``), its widget for lesson 08, the
terminal round (``terminal``, ``course drill``), scoring and the history of rounds."""
