package rdmaflux.samples.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import javax.imageio.ImageIO;

/** Draws the result charts with Java2D (headless), so producing them needs nothing beyond the JDK. */
final class Charts {
    private static final Color OURS = new Color(0x1f, 0x77, 0xb4);
    private static final Color C = new Color(0xff, 0x7f, 0x0e);
    private static final Color MET = new Color(0x2c, 0xa0, 0x2c);
    private static final Color MISSED = new Color(0xd6, 0x27, 0x28);
    private static final Color NEUTRAL = new Color(0x99, 0x99, 0x99);
    private static final Stroke DASHED = new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f,
            new float[] {7f, 5f}, 0f);

    private Charts() {
    }

    /**
     * Bandwidth over message size: ours and C, for SEND and RDMA WRITE.
     *
     * @param rows the bandwidth rows (unit Gbit/s)
     * @param title chart title
     * @param file where to write the PNG
     */
    static void bandwidth(List<Row> rows, String title, Path file) throws IOException {
        int w = 960;
        int h = 540;
        int left = 80;
        int right = 200;
        int top = 50;
        int bottom = 60;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = start(img, title);
        long minSize = rows.stream().mapToLong(Row::size).min().orElse(2);
        long maxSize = rows.stream().mapToLong(Row::size).max().orElse(1 << 20);
        double maxY = niceCeiling(rows.stream().flatMapToDouble(r -> java.util.stream.DoubleStream.of(r.ours(),
                r.c())).filter(v -> !Double.isNaN(v)).max().orElse(1) * 1.05);
        double lx0 = log2(minSize);
        double lx1 = Math.max(lx0 + 1, log2(maxSize));
        int pw = w - left - right;
        int ph = h - top - bottom;
        axes(g, left, top, pw, ph);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int i = 0; i <= 5; i++) {
            double v = maxY * i / 5;
            int y = top + ph - (int) (ph * i / 5.0);
            g.setColor(new Color(0xe0, 0xe0, 0xe0));
            g.drawLine(left + 1, y, left + pw, y);
            g.setColor(Color.DARK_GRAY);
            g.drawString(Row.fmt(v), left - 50, y + 4);
        }
        int lastLabel = -1000;
        for (Row r : rows) {
            int x = left + (int) (pw * (log2(r.size()) - lx0) / (lx1 - lx0));
            if (r.metric().startsWith("send") && x - lastLabel >= 50) {
                g.setColor(Color.DARK_GRAY);
                g.drawString(Row.sizeText(r.size()), x - 18, top + ph + 20);
                lastLabel = x;
            }
        }
        g.drawString("message size (log scale)", left + pw / 2 - 70, h - 15);
        g.rotate(-Math.PI / 2);
        g.drawString("Gbit/s", -(top + ph / 2 + 20), 20);
        g.rotate(Math.PI / 2);
        int legend = 0;
        for (String op : new String[] {"send", "write"}) {
            List<Row> series = rows.stream().filter(r -> r.metric().startsWith(op)).toList();
            for (int who = 0; who < 2; who++) {
                g.setColor(who == 0 ? OURS : C);
                g.setStroke(op.equals("send") ? new BasicStroke(2.5f) : DASHED);
                int px = -1;
                int py = -1;
                for (Row r : series) {
                    double v = who == 0 ? r.ours() : r.c();
                    if (Double.isNaN(v)) {
                        px = -1;
                        continue;
                    }
                    int x = left + (int) (pw * (log2(r.size()) - lx0) / (lx1 - lx0));
                    int y = top + ph - (int) (ph * v / maxY);
                    g.fillOval(x - 3, y - 3, 7, 7);
                    if (px >= 0) {
                        g.drawLine(px, py, x, y);
                    }
                    px = x;
                    py = y;
                }
                int ly = top + 20 + legend * 24;
                g.drawLine(left + pw + 20, ly, left + pw + 60, ly);
                g.setStroke(new BasicStroke(1f));
                g.setColor(Color.BLACK);
                g.drawString((who == 0 ? "rdmaflux " : "C (ib_") + op + (who == 0 ? "" : "_bw)"), left + pw + 68,
                        ly + 4);
                legend++;
            }
        }
        finish(g, img, file);
    }

    /**
     * One bar per compared row: ours / C, with the target bound marked, green where it holds, red where not.
     *
     * @param rows rows with a ratio
     * @param title chart title
     * @param file where to write the PNG
     */
    static void ratios(List<Row> rows, String title, Path file) throws IOException {
        // Rows with a target, plus the informational latency rows; the setup steps' ms ratios have their own
        // scale and would squeeze everything else.
        List<Row> bars = rows.stream().filter(r -> !Double.isNaN(r.ratio()) && !r.unit().equals("ms")).toList();
        int rowH = 24;
        int w = 960;
        int left = 330;
        int right = 90;
        int top = 50;
        int h = top + 50 + rowH * Math.max(1, bars.size());
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = start(img, title);
        double max = Math.max(2, bars.stream().mapToDouble(Row::ratio).max().orElse(1) * 1.05);
        int pw = w - left - right;
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int i = 0; i < bars.size(); i++) {
            Row r = bars.get(i);
            int y = top + i * rowH;
            g.setColor(switch (r.verdict()) {
                case "met" -> MET;
                case "MISSED" -> MISSED;
                default -> NEUTRAL;
            });
            int len = (int) (pw * Math.min(r.ratio(), max) / max);
            g.fillRect(left, y + 4, Math.max(1, len), rowH - 8);
            g.setColor(Color.BLACK);
            String label = r.metric() + (r.size() > 0 ? " " + Row.sizeText(r.size()) : "");
            g.drawString(label, 10, y + rowH / 2 + 4);
            g.drawString(Row.fmt(r.ratio()), left + len + 6, y + rowH / 2 + 4);
            if (r.target().isRatio()) {
                int tx = left + (int) (pw * r.bound() / max);
                g.setStroke(new BasicStroke(2f));
                g.drawLine(tx, y + 1, tx, y + rowH - 1);
                g.setStroke(new BasicStroke(1f));
            }
        }
        int axisY = top + bars.size() * rowH + 4;
        g.setColor(Color.DARK_GRAY);
        g.drawLine(left, top, left, axisY);
        g.drawLine(left, axisY, left + pw, axisY);
        double step = max > 8 ? Math.ceil(max / 8) : max > 4 ? 1 : 0.5;
        for (double v = 0; v <= max + 1e-9; v += step) {
            int x = left + (int) (pw * v / max);
            g.drawLine(x, axisY, x, axisY + 4);
            g.drawString(Row.fmt(v), x - 8, axisY + 18);
        }
        int one = left + (int) (pw / max);
        g.setStroke(DASHED);
        g.drawLine(one, top, one, axisY);
        g.setStroke(new BasicStroke(1f));
        g.drawString("ours / C  (black tick: target bound; green met, red missed, grey inconclusive, failed or no target)", left,
                axisY + 36);
        finish(g, img, file);
    }

    private static Graphics2D start(BufferedImage img, String title) {
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, img.getWidth(), img.getHeight());
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.drawString(title, 12, 28);
        return g;
    }

    private static void axes(Graphics2D g, int left, int top, int pw, int ph) {
        g.setColor(Color.DARK_GRAY);
        g.drawLine(left, top, left, top + ph);
        g.drawLine(left, top + ph, left + pw, top + ph);
    }

    private static void finish(Graphics2D g, BufferedImage img, Path file) throws IOException {
        g.dispose();
        ImageIO.write(img, "png", file.toFile());
    }

    /** {@return the smallest 1, 2 or 5 times a power of ten that is at least {@code v}} */
    static double niceCeiling(double v) {
        if (v <= 0 || Double.isNaN(v)) {
            return 1;
        }
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 2.5, 5, 10}) {
            if (m * p >= v) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }
}
