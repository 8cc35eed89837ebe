"""A distributed data bug that needs no process group (lesson 07): DistributedSampler.set_epoch
never called, so every epoch visits the data in one order. The sampler is given num_replicas and
rank explicitly, which lets one process show what rank 0 of a two-rank job would load."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

SET_EPOCH_BUGGY = code("""
    import torch
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    dataset = TensorDataset(torch.arange(16))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    orders = []
    for epoch in range(3):
        order = []
        for (batch,) in loader:
            order += batch.tolist()
        orders.append(order)
""")

SET_EPOCH_FIXED = SET_EPOCH_BUGGY.replace(
    "for epoch in range(3):\n",
    "for epoch in range(3):\n"
    "    sampler.set_epoch(epoch)                 # a new shuffle each epoch, the same on every rank\n")


def _set_epoch_measure(run: CodeRun) -> Symptom:
    orders = run["orders"]
    distinct = len({tuple(o) for o in orders})
    shown = "; ".join(" ".join(str(i) for i in o[:6]) + " ..." for o in orders)
    return Symptom(f"this rank's samples, epochs 1-{len(orders)}: {shown}\n"
                   f"epochs with an order of their own: {distinct} of {len(orders)}", distinct < len(orders),
                   {"orders": orders, "distinct": distinct})


SET_EPOCH = Drill(
    id="distributed.sampler_without_set_epoch",
    category="distributed",
    title="DistributedSampler.set_epoch never called",
    buggy_code=SET_EPOCH_BUGGY,
    fixed_code=SET_EPOCH_FIXED,
    measure=_set_epoch_measure,
    question=shuffled_question(
        "distributed.sampler_without_set_epoch",
        "This is what one rank of a multi-rank job loads. The sampler shuffles, yet the training "
        "curve repeats the same pattern every epoch. Why?",
        "Every epoch's shuffle is seeded by a counter nobody updates",
        ("seed=0 makes every shuffle the identity permutation",
         "shuffle=True is ignored once a sampler is given to the loader",
         "Both ranks load the same samples, so an epoch sees half the data"),
        "DistributedSampler seeds its permutation with seed + epoch, and epoch changes only "
        "through set_epoch()"),
    hints=("Print the first few indices this rank gets in each epoch.",
           "Read DistributedSampler.__iter__: which numbers seed its generator?"),
    explanation="DistributedSampler shuffles with a generator seeded by seed + self.epoch, so that "
                "every rank draws the same permutation and takes its own slice of it. self.epoch "
                "only changes through sampler.set_epoch(epoch); without that call every epoch "
                "repeats epoch 0's order on every rank. The docs ask for set_epoch() at the "
                "start of each epoch, before the DataLoader iterator is created.",
    source="R65 in references.md (DistributedSampler: call set_epoch at the start of every "
           "epoch; torch/utils/data/distributed.py in 2.13 seeds with seed + epoch)",
    variants=(
        Variant("rank 1 of 2, 20 samples, 4 epochs",
                {"orders": "visits", "order": "seen"},
                (("torch.arange(16)", "torch.arange(20)"),
                 ("rank=0", "rank=1"), ("range(3)", "range(4)"))),
        Variant("rank 2 of 4, features and labels",
                {"dataset": "train_set", "batch": "ids"},
                (("TensorDataset(torch.arange(16))",
                  "TensorDataset(torch.arange(24), torch.arange(72.0).view(24, 3))"),
                 ("num_replicas=2, rank=0", "num_replicas=4, rank=2"),
                 ("for (batch,) in loader:", "for batch, features in loader:"),
                 ("batch_size=4", "batch_size=3"))),
        Variant("the sampler reached through the loader, another seed",
                {"loader": "batches"},
                (("sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, "
                  "seed=0)\nloader = DataLoader(dataset, batch_size=4, sampler=sampler)",
                  "loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(\n"
                  "    dataset, num_replicas=2, rank=0, shuffle=True, seed=7))"),
                 ("    sampler.set_epoch(epoch)", "    loader.sampler.set_epoch(epoch)"))),
    ),
)

DRILLS = (SET_EPOCH,)
