"""Learning: the models, their training, calibration, metrics, persistence and figures.

One job a module: matrix (the meta model's input matrix), metamodel (train and predict the
calibrated meta model), persistence (joblib payload + JSON sidecar, atomic), onnx_export,
calibration (score -> probability maps and fold metrics), metrics (out-of-sample and
cross-sectional evaluation), plots (the PNGs), purged_cv (PurgedKFold), lstm_training (the
LSTM specialist's network and training loop); the stages that use them: cv_report, meta,
predictions, lstm, training_data. Kernels (array code) stay in `kernels`.
"""
