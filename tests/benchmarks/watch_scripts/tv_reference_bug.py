"""Classification training in the style of torchvision's `references/classification/train.py`:
a `SmoothedValue`/`MetricLogger` pair that formats running metrics, a `train_one_epoch` /
`evaluate` split, label-smoothed cross-entropy, SGD with a linear warm-up followed by a
MultiStepLR decay (chained with SequentialLR and stepped once per epoch, as in the reference),
an `ExponentialMovingAverage` (AveragedModel) updated every few iterations, gradient clipping,
bfloat16 autocast on CPU, and a checkpoint dict kept in memory. The data is a synthetic
"spectrogram" tensor set (1x12x12) with 5 classes and a small conv net with dropout.
Bug: `optimizer.zero_grad()` was lost from `train_one_epoch`, so gradients accumulate across
all optimizer steps.
expect: missing zero_grad, growing grads
"""
import copy
import datetime
import time
from collections import defaultdict, deque

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class SmoothedValue:
    """Track a series of values and provide access to smoothed values over a window."""

    def __init__(self, window_size=20, fmt="{median:.4f} ({global_avg:.4f})"):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0
        self.fmt = fmt

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n

    @property
    def median(self):
        return torch.tensor(list(self.deque)).median().item()

    @property
    def avg(self):
        return torch.tensor(list(self.deque), dtype=torch.float32).mean().item()

    @property
    def global_avg(self):
        return self.total / max(self.count, 1)

    @property
    def value(self):
        return self.deque[-1]

    def __str__(self):
        return self.fmt.format(median=self.median, avg=self.avg, global_avg=self.global_avg, value=self.value)


class MetricLogger:
    def __init__(self, delimiter="  "):
        self.meters = defaultdict(SmoothedValue)
        self.delimiter = delimiter

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.meters[k].update(v)

    def add_meter(self, name, meter):
        self.meters[name] = meter

    def __str__(self):
        return self.delimiter.join(f"{name}: {meter}" for name, meter in self.meters.items())

    def log_every(self, iterable, print_freq, header=""):
        start = time.time()
        for i, obj in enumerate(iterable):
            yield obj
            if i % print_freq == 0 or i == len(iterable) - 1:
                print(f"{header} [{i}/{len(iterable)}] {self}")
        total = str(datetime.timedelta(seconds=int(time.time() - start)))
        print(f"{header} Total time: {total}")


def accuracy(output, target, topk=(1,)):
    with torch.inference_mode():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target[None])
        return [correct[:k].flatten().sum(dtype=torch.float32) * (100.0 / batch_size) for k in topk]


class ExponentialMovingAverage(torch.optim.swa_utils.AveragedModel):
    def __init__(self, model, decay, device="cpu"):
        def ema_avg(avg_model_param, model_param, num_averaged):
            return decay * avg_model_param + (1 - decay) * model_param

        super().__init__(model, device, ema_avg, use_buffers=True)


def build_model(num_classes=5):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Dropout(0.2), nn.Linear(32, num_classes),
    )


def make_dataset(n, generator):
    y = torch.randint(0, 5, (n,), generator=generator)
    t = torch.linspace(0, 1, 12)
    freq = (y.float() + 1.0)[:, None, None]
    rows = torch.sin(2 * torch.pi * freq * t[None, None, :]) * torch.exp(-((torch.arange(12.0)[None, :, None] - 2 * y[:, None, None]) ** 2) / 6)
    x = rows + 0.5 * torch.randn(n, 12, 12, generator=generator)
    return TensorDataset(x.unsqueeze(1), y)


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, model_ema=None):
    model.train()
    metric_logger = MetricLogger(delimiter="  ")
    metric_logger.add_meter("lr", SmoothedValue(window_size=1, fmt="{value}"))
    header = f"Epoch: [{epoch}]"
    for i, (image, target) in enumerate(metric_logger.log_every(data_loader, args["print_freq"], header)):
        image, target = image.to(device), target.to(device)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=args["amp"]):
            output = model(image)
            loss = criterion(output, target)

        loss.backward()
        if args["clip_grad_norm"] is not None:
            nn.utils.clip_grad_norm_(model.parameters(), args["clip_grad_norm"])
        optimizer.step()

        if model_ema and i % args["model_ema_steps"] == 0:
            model_ema.update_parameters(model)

        acc1, = accuracy(output.float(), target, topk=(1,))
        metric_logger.update(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
        metric_logger.meters["acc1"].update(acc1.item(), n=image.shape[0])


def evaluate(model, criterion, data_loader, device, log_suffix=""):
    model.eval()
    metric_logger = MetricLogger(delimiter="  ")
    with torch.inference_mode():
        for image, target in data_loader:
            image, target = image.to(device, non_blocking=True), target.to(device, non_blocking=True)
            output = model(image)
            loss = criterion(output, target)
            acc1, = accuracy(output, target, topk=(1,))
            batch_size = image.shape[0]
            metric_logger.update(loss=loss.item())
            metric_logger.meters["acc1"].update(acc1.item(), n=batch_size)
    print(f"Test {log_suffix}: Acc@1 {metric_logger.meters['acc1'].global_avg:.3f}")
    return metric_logger.meters["acc1"].global_avg


def main():
    args = {"epochs": 6, "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "label_smoothing": 0.1,
            "lr_warmup_epochs": 1, "lr_steps": [4], "lr_gamma": 0.1, "print_freq": 25,
            "clip_grad_norm": 2.0, "amp": device == "cpu", "model_ema_steps": 4, "model_ema_decay": 0.95}
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    dataset, dataset_test = make_dataset(1280, g), make_dataset(512, g)
    data_loader = DataLoader(dataset, batch_size=32, shuffle=True)
    data_loader_test = DataLoader(dataset_test, batch_size=256)

    model = build_model().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=args["label_smoothing"])
    optimizer = torch.optim.SGD(model.parameters(), lr=args["lr"], momentum=args["momentum"],
                                weight_decay=args["weight_decay"])
    main_lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=args["lr_steps"], gamma=args["lr_gamma"])
    warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=args["lr_warmup_epochs"])
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler], milestones=[args["lr_warmup_epochs"]])

    model_ema = ExponentialMovingAverage(model, decay=args["model_ema_decay"], device=device)

    best_acc, checkpoint = 0.0, None
    for epoch in range(args["epochs"]):
        train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, model_ema)
        lr_scheduler.step()
        acc = evaluate(model, criterion, data_loader_test, device)
        evaluate(model_ema, criterion, data_loader_test, device, log_suffix="EMA")
        if acc > best_acc:
            best_acc = acc
            checkpoint = {
                "model": copy.deepcopy(model.state_dict()),
                "optimizer": copy.deepcopy(optimizer.state_dict()),
                "lr_scheduler": lr_scheduler.state_dict(),
                "model_ema": copy.deepcopy(model_ema.state_dict()),
                "epoch": epoch,
            }
    print(f"best Acc@1 {best_acc:.3f} (epoch {checkpoint['epoch']})")


if __name__ == "__main__":
    main()
