"""Fine-tune a tiny BERT-like encoder for 3-way sequence classification in the style of the
HuggingFace `run_glue_no_trainer.py` example: a synthetic "review" dataset of token ids with
sentiment keywords, a config object, a `...ForSequenceClassification` model that returns a dict
with `loss` and `logits`, AdamW with the usual no-decay parameter groups (bias/LayerNorm),
`get_linear_schedule_with_warmup` re-implemented with LambdaLR and stepped once per optimizer
update, gradient accumulation, gradient clipping, and evaluation with an in-memory best
checkpoint. Fixed version: the head reads the [CLS] hidden state directly, so the encoder is fine-tuned end to end.
expect: -
"""
import copy
import math
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class TinyBertConfig:
    vocab_size = 64
    hidden_size = 48
    num_attention_heads = 4
    num_hidden_layers = 2
    intermediate_size = 96
    max_position_embeddings = 32
    hidden_dropout_prob = 0.1
    num_labels = 3
    pad_token_id = 0
    cls_token_id = 1


class SyntheticReviews(Dataset):
    """Token-id sequences; the label is the keyword group that appears first in the review."""

    GROUPS = [(2, 8), (8, 14), (14, 20)]

    def __init__(self, n, max_len=24, seed=0):
        rng = np.random.RandomState(seed)
        self.input_ids = np.zeros((n, max_len), dtype=np.int64)
        self.attention_mask = np.zeros((n, max_len), dtype=np.int64)
        self.labels = np.zeros(n, dtype=np.int64)
        for i in range(n):
            length = rng.randint(10, max_len + 1)
            toks = rng.randint(20, 64, size=length)
            toks[0] = TinyBertConfig.cls_token_id
            label = rng.randint(3)
            pos = np.sort(rng.choice(np.arange(1, length), size=3, replace=False))
            lo, hi = self.GROUPS[label]
            toks[pos[0]] = rng.randint(lo, hi)
            for p in pos[1:]:
                g = self.GROUPS[rng.randint(3)]
                toks[p] = rng.randint(*g)
            self.input_ids[i, :length] = toks
            self.attention_mask[i, :length] = 1
            self.labels[i] = label

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {
            "input_ids": torch.from_numpy(self.input_ids[idx]),
            "attention_mask": torch.from_numpy(self.attention_mask[idx]),
            "labels": torch.tensor(self.labels[idx]),
        }


class TinyBertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids):
        seq_len = input_ids.size(1)
        position_ids = torch.arange(seq_len, device=input_ids.device).unsqueeze(0)
        emb = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(emb))


class TinyBertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = TinyBertEmbeddings(config)
        layer = nn.TransformerEncoderLayer(
            d_model=config.hidden_size,
            nhead=config.num_attention_heads,
            dim_feedforward=config.intermediate_size,
            dropout=config.hidden_dropout_prob,
            activation="gelu",
            batch_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=config.num_hidden_layers, enable_nested_tensor=False)

    def forward(self, input_ids, attention_mask):
        hidden = self.embeddings(input_ids)
        key_padding_mask = attention_mask == 0
        return self.encoder(hidden, src_key_padding_mask=key_padding_mask)


class TinyBertForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_labels = config.num_labels
        self.bert = TinyBertModel(config)
        self.pooler = nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.Tanh())
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, attention_mask, labels=None):
        sequence_output = self.bert(input_ids, attention_mask)
        cls_hidden = sequence_output[:, 0]
        pooled_output = self.dropout(self.pooler(cls_hidden))
        logits = self.classifier(pooled_output)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return {"loss": loss, "logits": logits}


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return LambdaLR(optimizer, lr_lambda)


@torch.no_grad()
def evaluate(model, dataloader):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    for batch in dataloader:
        batch = {k: v.to(device) for k, v in batch.items()}
        out = model(**batch)
        preds = out["logits"].argmax(dim=-1)
        correct += (preds == batch["labels"]).sum().item()
        total += batch["labels"].numel()
        loss_sum += out["loss"].item() * batch["labels"].numel()
    model.train()
    return {"accuracy": correct / total, "loss": loss_sum / total}


def main():
    set_seed(42)
    config = TinyBertConfig()
    train_ds = SyntheticReviews(768, seed=1)
    eval_ds = SyntheticReviews(256, seed=2)
    train_dataloader = DataLoader(train_ds, batch_size=32, shuffle=True)
    eval_dataloader = DataLoader(eval_ds, batch_size=128)

    model = TinyBertForSequenceClassification(config).to(device)

    weight_decay = 0.01
    no_decay = ["bias", "LayerNorm.weight", "norm1.weight", "norm2.weight"]
    optimizer_grouped_parameters = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=2e-3)

    num_train_epochs = 5
    gradient_accumulation_steps = 2
    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / gradient_accumulation_steps)
    max_train_steps = num_train_epochs * num_update_steps_per_epoch
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * max_train_steps), max_train_steps)

    completed_steps = 0
    best_acc, best_state = 0.0, None
    model.train()
    for epoch in range(num_train_epochs):
        running = 0.0
        for step, batch in enumerate(train_dataloader):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs["loss"] / gradient_accumulation_steps
            loss.backward()
            running += loss.detach()
            if (step + 1) % gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                completed_steps += 1
                if completed_steps % 20 == 0:
                    print(f"step {completed_steps} loss {running.item() / 20 * gradient_accumulation_steps:.4f} "
                          f"lr {lr_scheduler.get_last_lr()[0]:.2e}")
                    running = 0.0
        metrics = evaluate(model, eval_dataloader)
        print(f"epoch {epoch}: eval {metrics}")
        if metrics["accuracy"] > best_acc:
            best_acc = metrics["accuracy"]
            best_state = {"model": copy.deepcopy(model.state_dict()), "epoch": epoch, "step": completed_steps}
    print(f"best eval accuracy {best_acc:.3f} at epoch {best_state['epoch']}")


if __name__ == "__main__":
    main()
