// Offscreen tests of the drift page (filled in with the feature).
#include <QtTest>

class TestDriftPage : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void builds() { QVERIFY(true); }
};

QTEST_MAIN(TestDriftPage)
#include "test_drift_page.moc"
