"""The sync-point finder (lesson 03): ``find_sync_points`` (``finder``), what counts as a host
read and the watcher that notices each (``host_reads``), and the listing of the points by
kind and line (``listing``)."""
