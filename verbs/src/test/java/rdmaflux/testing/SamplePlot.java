package rdmaflux.testing;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

import javax.imageio.ImageIO;

/**
 * Draws {@link ProcessSampler} files as a PNG: resident memory, threads and file descriptors over time, one
 * panel each, one line per file. Used by {@code scripts/chaos} for the chaos run's and the soak's graphs.
 *
 * <p>Usage: {@code SamplePlot OUT.png TITLE LABEL=FILE.tsv...}
 */
public final class SamplePlot {
    private static final int W = 900;
    private static final int PANEL = 200;
    private static final int LEFT = 70;
    private static final int TOP = 40;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
        new Color(0x9467bd)};

    private SamplePlot() {
    }

    private record Series(String label, List<ProcessSample> samples) {
    }

    private record Panel(String title, ToDoubleFunction<ProcessSample> value) {
    }

    /**
     * @param args the PNG to write, a title, then LABEL=FILE for each series
     * @throws IOException when a file cannot be read or the PNG written
     */
    public static void main(String[] args) throws IOException {
        if (args.length < 3) {
            System.err.println("usage: SamplePlot OUT.png TITLE LABEL=FILE.tsv...");
            System.exit(2);
        }
        List<Series> series = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            List<ProcessSample> s = ProcessSampler.read(Path.of(args[i].substring(eq + 1)));
            if (!s.isEmpty()) {
                series.add(new Series(args[i].substring(0, eq), s));
            }
        }
        if (series.isEmpty()) {
            throw new IllegalArgumentException("no samples in " + List.of(args).subList(2, args.length));
        }
        ImageIO.write(draw(args[1], series), "png", Path.of(args[0]).toFile());
    }

    private static BufferedImage draw(String title, List<Series> series) {
        List<Panel> panels = List.of(new Panel("resident memory (MiB)", s -> s.rssKib() / 1024.0),
                new Panel("threads", ProcessSample::threads), new Panel("file descriptors", ProcessSample::fds));
        int h = TOP + panels.size() * (PANEL + 40) + 30;
        BufferedImage img = new BufferedImage(W, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, W, h);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.drawString(title, LEFT, 22);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        long t0 = series.stream().mapToLong(s -> s.samples.getFirst().atMillis()).min().orElseThrow();
        long t1 = series.stream().mapToLong(s -> s.samples.getLast().atMillis()).max().orElseThrow();
        double minutes = Math.max(1e-3, (t1 - t0) / 60_000.0);
        for (int p = 0; p < panels.size(); p++) {
            int y0 = TOP + p * (PANEL + 40);
            Panel panel = panels.get(p);
            double max = 0;
            for (Series s : series) {
                for (ProcessSample x : s.samples) {
                    max = Math.max(max, panel.value.applyAsDouble(x));
                }
            }
            max = max <= 0 ? 1 : max * 1.1;
            g.setColor(Color.BLACK);
            g.drawString(panel.title, LEFT, y0 + 12);
            int top = y0 + 18;
            int right = W - 20;
            g.setColor(Color.LIGHT_GRAY);
            g.drawRect(LEFT, top, right - LEFT, PANEL);
            g.setColor(Color.DARK_GRAY);
            for (int k = 0; k <= 4; k++) {
                int y = top + PANEL - k * PANEL / 4;
                g.drawString(String.format("%.0f", max * k / 4), 8, y + 4);
                int x = LEFT + k * (right - LEFT) / 4;
                g.drawString(String.format("%.1f min", minutes * k / 4), x - (k == 4 ? 44 : 18), top + PANEL + 14);
            }
            g.setStroke(new BasicStroke(1.5f));
            for (int si = 0; si < series.size(); si++) {
                Series s = series.get(si);
                g.setColor(COLORS[si % COLORS.length]);
                int px = -1;
                int py = -1;
                for (ProcessSample x : s.samples) {
                    int cx = LEFT + (int) Math.round((x.atMillis() - t0) / 60_000.0 / minutes * (right - LEFT));
                    int cy = top + PANEL - (int) Math.round(panel.value.applyAsDouble(x) / max * PANEL);
                    if (px >= 0) {
                        g.drawLine(px, py, cx, cy);
                    }
                    px = cx;
                    py = cy;
                }
                if (p == 0) {
                    g.drawString(s.label, right - 200, top + 14 + 13 * si);
                }
            }
        }
        g.dispose();
        return img;
    }
}
