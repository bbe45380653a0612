$points << EOD
6610628 1787741.0774953414 114.73018222577792 "R8 c1 u" 1 1 0
6610652 1786329.4003759662 112.21745171446622 "R8 c2 u" 1 1 0
6610700 1795200.4673053515 112.15807714157523 "R8 c4 u" 1 1 1
6629084 1753694.5255277569 92.377850869689709 "R16 c1 u" 1 1 0
6629132 1785892.7683845335 92.767561717200692 "R16 c2 u" 1 0 1
6629228 1776905.2264255602 92.625473719652987 "R16 c4 u" 1 0 0
6684452 1744699.6351116111 54.585402250668579 "R40 c1 u" 1 1 1
6684572 1778684.0784580219 55.384378741011432 "R40 c2 u" 1 0 1
6684812 1757185.6230441595 54.768983928539484 "R40 c4 u" 1 0 1
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6610628 114.73018222577792
6610652 112.21745171446622
6610700 112.15807714157523
6629084 92.377850869689709
6684452 54.585402250668579
EOD
$front_tps << EOD
1795200.4673053515 112.15807714157523
1785892.7683845335 92.767561717200692
1778684.0784580219 55.384378741011432
1757185.6230441595 54.768983928539484
1744699.6351116111 54.585402250668579
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/u1/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [44.2266:129.189]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.72M" 1720000, "1.74M" 1740000, "1.76M" 1760000, "1.78M" 1780000, "1.8M" 1800000, "1.82M" 1820000, "1.84M" 1840000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.69147e+06:1.8517e+06]
set yrange [44.2266:129.189]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/u1/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [44.2266:129.189]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.72M" 1720000, "1.74M" 1740000, "1.76M" 1760000, "1.78M" 1780000, "1.8M" 1800000, "1.82M" 1820000, "1.84M" 1840000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.69147e+06:1.8517e+06]
set yrange [44.2266:129.189]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
