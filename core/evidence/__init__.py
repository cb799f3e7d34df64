"""Evidence: measurements set against the model.

`formats` (each benchmark tool's output, one registration each in
`formats.registry`), `matching` (tool names to catalogue ids),
`measurements` (the record and its bulk validation), `importers` (a file
into a dataset, one transaction), `compare` (measured against predicted),
`predictor` (the predicted model fitted on the published measurements and scored held out), `refit` (the
predicted model refitted on your own measurements).
"""
