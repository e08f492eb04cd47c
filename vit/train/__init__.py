"""Training: the options (``options``), the data and its augmentation (``data``, ``augment``),
the optimizer and its weight-decay rule (``optimizer``), the training checkpoint and run folder
(``checkpoint``, ``runfolder``, ``rngstate``), the loop (``loop``), cross-validation
(``crossval``), and ``load`` (``loading``): a trained model back from what training wrote."""
