"""What a `vllm serve` command line asks for, read from its argv alone: the command a job runs with
options removed and its variants (edit), its ranks and device count (parallel), its context length
(context), the shape a twin of its model must have (shape), and the deepest tier a job of it runs to
(tier). Pure functions of the argv (and the snippet, the target's cap): no process, no file."""
