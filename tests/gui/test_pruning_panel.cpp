// Offscreen tests of the pruning panel (filled in with the feature).
#include <QtTest>

class TestPruningPanel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void builds() { QVERIFY(true); }
};

QTEST_MAIN(TestPruningPanel)
#include "test_pruning_panel.moc"
