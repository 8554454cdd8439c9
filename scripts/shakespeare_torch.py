"""shakespeare_torch.py: the shakespeare model as a PyTorch module, and a checkpoint loader.

The C trainer's model is exactly

    Embedding(V, E) -> nn.LSTM(E, H, num_layers=L, batch_first=True, dropout=p)
                    -> Dropout(p) -> Linear(H, V) -> cross-entropy (mean over B*T)

and its checkpoints (<name>.safetensors) store the parameters under this module's
state_dict names and shapes:

    embedding.weight      (V, E)
    lstm.weight_ih_l{k}   (4H, E or H)     gate rows in PyTorch's order i, f, g, o
    lstm.weight_hh_l{k}   (4H, H)
    lstm.bias_ih_l{k}     (4H,)
    lstm.bias_hh_l{k}     (4H,)
    fc.weight             (V, H)
    fc.bias               (V,)

so a checkpoint loads with load_state_dict(strict=True):

    from shakespeare_torch import load_checkpoint
    model, meta = load_checkpoint("out/model.safetensors")   # meta["vocab"]: code points
    logits, state = model(torch.tensor([[meta["vocab"].index(ord("T"))]]))

Run as a script it loads a checkpoint and prints its configuration:

    /usr/bin/python3 scripts/shakespeare_torch.py out/model.safetensors

The safetensors reader is the `safetensors` package when it is importable, else the small
pure-Python reader below (the format: u64 LE header length, JSON header, raw LE data).
"""

import json
import struct
import sys

import torch
import torch.nn as nn


class CharLSTM(nn.Module):
    """Character-level LSTM language model; forward(x, state) -> (logits, state).

    x: (B, T) int64 token ids. state: None (zeros) or a tuple (h, c), each (L, B, H).
    logits: (B, T, V). Dropout p acts between LSTM layers and before fc, in training only.
    """

    def __init__(self, vocab_size, embed_size, hidden_size, num_layers, dropout=0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed_size = embed_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout_p = dropout
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # nn.LSTM warns when dropout > 0 with a single layer; it has no effect there anyway.
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers=num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)  # no parameters: not in the state_dict
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, state=None):
        emb = self.embedding(x)              # (B, T, E)
        out, state = self.lstm(emb, state)   # (B, T, H); state (L, B, H) each
        logits = self.fc(self.drop(out))     # (B, T, V)
        return logits, state

    def loss(self, logits, y):
        """Mean cross-entropy over B*T positions, as the C trainer reports it."""
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


# ---- safetensors -------------------------------------------------------------------------

_DTYPES = {"F32": (torch.float32, "f", 4), "F64": (torch.float64, "d", 8),
           "I32": (torch.int32, "i", 4), "I64": (torch.int64, "q", 8)}


def _read_safetensors_pure(path):
    """Pure-Python safetensors reader: (dict name -> tensor, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors file ({len(blob)} bytes)")
    (hlen,) = struct.unpack_from("<Q", blob, 0)
    if hlen > len(blob) - 8:
        raise ValueError(f"{path}: header length {hlen} exceeds the file size {len(blob)}")
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = memoryview(blob)[8 + hlen:]
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        tdtype, code, size = _DTYPES[info["dtype"]]
        shape = [int(d) for d in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        numel = 1
        for d in shape:
            numel *= d
        if not (0 <= begin <= end <= len(data)) or end - begin != numel * size:
            raise ValueError(f"{path}: tensor {name} has bad data offsets {begin}..{end}")
        try:
            import numpy as np
            arr = np.frombuffer(data[begin:end], dtype="<" + code).copy()
            t = torch.from_numpy(arr)
        except ImportError:
            t = torch.tensor(struct.unpack_from(f"<{numel}{code}", data, begin), dtype=tdtype)
        tensors[name] = t.to(tdtype).reshape(shape)
    return tensors, meta


def read_safetensors(path):
    """(dict name -> tensor, metadata dict of strings) of a safetensors file."""
    try:
        from safetensors import safe_open
    except ImportError:
        return _read_safetensors_pure(path)
    tensors = {}
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            tensors[name] = f.get_tensor(name)
    return tensors, meta


def load_checkpoint(path, dropout=None):
    """Builds a CharLSTM from a shakespeare checkpoint: (model in eval mode, metadata).

    metadata has the raw strings plus, parsed: vocab_size, embed_size, hidden_size,
    num_layers, dropout (ints / float) and vocab (list of code points, index = token id).
    dropout overrides the checkpoint's dropout (e.g. 0.0 for inference).
    """
    tensors, meta = read_safetensors(path)
    meta = dict(meta)
    fmt = meta.get("format")
    if fmt != "shakespeare-lstm-1":
        raise ValueError(f"{path}: not a shakespeare checkpoint (format {fmt!r})")
    for key in ("vocab_size", "embed_size", "hidden_size", "num_layers"):
        meta[key] = int(meta[key])
    meta["dropout"] = float(meta.get("dropout", "0"))
    meta["vocab"] = [int(c) for c in json.loads(meta["vocab"])]
    if len(meta["vocab"]) != meta["vocab_size"]:
        raise ValueError(f"{path}: vocab has {len(meta['vocab'])} entries, vocab_size is {meta['vocab_size']}")
    model = CharLSTM(meta["vocab_size"], meta["embed_size"], meta["hidden_size"], meta["num_layers"],
                     meta["dropout"] if dropout is None else dropout)
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
    model.eval()
    return model, meta


def main(argv):
    if len(argv) != 2:
        print("usage: shakespeare_torch.py MODEL.safetensors", file=sys.stderr)
        return 2
    model, meta = load_checkpoint(argv[1])
    print(f"loaded {argv[1]}: V={meta['vocab_size']} E={meta['embed_size']} H={meta['hidden_size']} "
          f"L={meta['num_layers']} dropout={meta['dropout']} "
          f"params={sum(p.numel() for p in model.parameters())}")
    for name, p in model.state_dict().items():
        print(f"  {name:24s} {tuple(p.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
